/*
 * A guard in front of libyaml for both YAML files Muster reads: the queue
 * file (config/) and a kubeconfig (kubeconfig_yaml.c). Text it refuses is
 * never handed to libyaml's loader.
 *
 * Why. libyaml has no limit on nesting, and two kinds cost far more than
 * their size. Its scanner re-checks every open flow collection ('[' or
 * '{') at each token, so N nested brackets cost O(N^2): 80 KB of '[' took
 * 18 s to refuse, 1 MiB more than ten minutes. And its loader builds a
 * node per level of block nesting before anyone can look at the tree:
 * 1 MiB of "- - - ..." is half a million nested lists, 170 MB. A real
 * queue file nests about 6 deep (37 with cohorts at their deepest 16), a
 * kubeconfig 5.
 *
 * What is refused, in this order:
 *   - text larger than YAML_GUARD_MAX_BYTES;
 *   - a '[' or '{' nested deeper than YAML_GUARD_MAX_DEPTH, found by a
 *     scan of the bytes that skips quoted scalars, comments and block
 *     scalars, before libyaml sees them;
 *   - a list or mapping nested deeper than YAML_GUARD_MAX_DEPTH, block
 *     or flow, found in the events of one libyaml parse that stops at the
 *     first one too deep. This also catches flow nesting the scan missed
 *     (its reading of YAML is approximate, see yaml_guard.c), and does so
 *     cheaply: below the limit libyaml's cost per token is bounded.
 * Syntax errors are not the guard's business: the parse that follows
 * reports them in its reader's own words.
 *
 * Why in kubeapi/. Both readers must use the same check. config/ already
 * depends on kubeapi/ (quantities) and kubeapi/ must not depend on
 * config/, so kubeapi/ is the one place both reach without a cycle. The
 * guard knows neither file's format; it only needs libyaml.
 *
 * Cost. The scan is O(len), one pass over the bytes, no allocation. The
 * event pass is a second parse by libyaml: about half the time of the
 * load that follows (0.1 s against 0.22 s for 1 MiB of the smallest
 * nodes), O(YAML_GUARD_MAX_DEPTH) memory; a refused text stops at the
 * first node too deep. No state: safe to call from any thread.
 */
#ifndef MUSTER_BASE_YAML_GUARD_H
#define MUSTER_BASE_YAML_GUARD_H

#include <stddef.h>

/** Largest YAML text accepted, in bytes. Kubernetes refuses a ConfigMap
 *  or a Secret larger than 1 MiB, and that is how both files reach a pod;
 *  1 MiB holds about 4000 queues written as in config/example.yaml, or
 *  some 150 kubeconfig contexts with certificate and key inline. A larger
 *  cap would buy little and cost memory: libyaml's tree is up to 85 times
 *  the text (1 MiB of "a," is 85 MB). */
#define YAML_GUARD_MAX_BYTES (1024 * 1024)

/** Deepest nesting of lists and mappings accepted, flow or block (the
 *  top-level mapping is depth 1). Above every real file (a queue file
 *  with cohorts nested the most it allows reaches 37, so the queue
 *  file's own, clearer message about cohorts still comes first), and
 *  small enough that libyaml's cost per token stays bounded. */
#define YAML_GUARD_MAX_DEPTH 64

/** Why a text was refused: where, 1-based (line 0 when it is about the
 *  whole text), and what, without the file's name. */
struct yaml_refusal {
	size_t line, column;
	char msg[96];
};

/** Check text[0..len) before libyaml loads it. Returns 0 when it may be
 *  loaded; -EFBIG when it is larger than YAML_GUARD_MAX_BYTES;
 *  -EINVAL when something is nested deeper than YAML_GUARD_MAX_DEPTH;
 *  -ENOMEM when libyaml's parser cannot be made. On -EFBIG and -EINVAL
 *  *why says where and what ("'[' nested deeper than 64 levels"). A
 *  column counts characters, as libyaml's does. O(len). */
int yaml_guard(const char *text, size_t len, struct yaml_refusal *why);

#endif /* MUSTER_BASE_YAML_GUARD_H */
