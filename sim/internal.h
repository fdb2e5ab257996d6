/*
 * Inside sim/: the in-memory cluster (world.c) the clock (sim.c) moves.
 */
#ifndef MUSTER_SIM_INTERNAL_H
#define MUSTER_SIM_INTERNAL_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "base/idmap.h"
#include "kubeapi/model.h"
#include "sim/sim.h"

/* The scheduler name simulated pods ask for. */
#define SIM_SCHEDULER "muster"

/* Where a run's clock stops when its options say nothing (30 days), and
 * how many rounds of binds at one time are taken for a loop. */
#define SIM_DEFAULT_STOP_S (30 * 24 * 3600)
#define SIM_MAX_ROUNDS     64

/* file.c: path whole into *text (NUL-terminated, *len bytes; free it):
 * 0, -EFBIG past max bytes, -ENOMEM, or the negative errno of the read. */
int sim__read_file(const char *path, size_t max, char **text, size_t *len);

/* The stores the planner reads (plan_input), and the model behind them. */
struct sim_world {
	struct kubeapi_model *model;
	struct idmap nodes, pods, groups, vcgroups, natgroups, priorityclasses;
	uint64_t seq; /* uids */
	int64_t epoch_s;
};

int sim__world_init(struct sim_world *w, int64_t epoch_s);
void sim__world_free(struct sim_world *w);
uint32_t sim__id(struct sim_world *w, const char *s);
/* The cache's key of an object: namespace id << 32 | name id. */
uint64_t sim__key(struct sim_world *w, const char *ns, const char *name);

/* A plan_input over the world's stores and qs: the caller adds the
 * scheduler names, the clock and what it wants published. */
void sim__plan_input(struct sim_world *w, struct queue_set *qs, struct plan_input *in);

/* {"metadata": {name, namespace (NULL: none), a fresh uid,
 * resourceVersion "1"}}, *meta its metadata; NULL when out of memory. */
cJSON *sim__object(struct sim_world *w, const char *ns, const char *name, cJSON **meta);
/* o[key] = unix_s in RFC 3339, as the API server writes times. */
void sim__add_time(cJSON *o, const char *key, int64_t unix_s);

/* Each writes the object as the API server would send it now, decoded,
 * replacing the one of the same key. 0, -EINVAL (the decoder refused
 * it), -ENOMEM. */
int sim__put_node(struct sim_world *w, const struct sim_node *n);
int sim__put_group(struct sim_world *w, const struct sim_gang *g);
/* Member p of g: pending (node NULL), else on node in phase (NULL:
 * Running) since start_s (seconds from the start). */
int sim__put_pod(struct sim_world *w, const struct sim_gang *g, uint32_t p, const char *node,
                 const char *phase, int64_t start_s);

/* An object of a snapshot (a List's item) decoded into its store: 1 when
 * taken, 0 when of a kind the planner does not read, -EINVAL (the decoder
 * refused it: why in err), -ENOMEM. */
int sim__put_item(struct sim_world *w, const cJSON *item, char *err, size_t errlen);
/* Pod p (in the pod store) as it would be later: on node (name id, 0:
 * keep), in phase, started at started_s (unix; 0: keep). 0, -ENOMEM. */
int sim__move_pod(struct sim_world *w, const struct kubeapi_pod *p, uint32_t node, uint8_t phase,
                  int64_t started_s);

#endif /* MUSTER_SIM_INTERNAL_H */
