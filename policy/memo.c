/*
 * The failure memo of one cycle (plan_internal.h): placements that
 * failed, per static fit, reused for later gangs that ask at least as
 * much. Cost: O(MEMO_SHAPES) per lookup, one arena record per fit.
 */
#include <stdbool.h>
#include <string.h>

#include "policy/plan_internal.h"

/* Placements that failed this cycle for gangs of one spec, per static
 * fit (the nodes a spec may use at all). Capacity only shrinks during a
 * cycle, so a later gang of the same fit that asks at least as much per
 * member, for at least as many members, fails too: it is answered from
 * here without a placement. (The greedy placement is not strictly
 * monotone, so this can, rarely, hold back a gang that a full search
 * would have fitted; it gets its own try in the next cycle's order.) */
#define MEMO_SHAPES 8
struct memo {
	struct plan_memo_shape v[MEMO_SHAPES];
	/* The oldest shape is replaced first, after the ones a new shape
	 * makes redundant (drop_dominated()): the shapes kept are minimal,
	 * so fractional gangs' many incomparable shapes still find room. */
	unsigned count, next;
};

/* Do spec's vGPU asks ask at least what sh's do, container by container
 * (memory compared only when both ask it the same way)? */
static bool vgpu_dominates(const struct kubeapi_podspec *spec, const struct kubeapi_podspec *sh)
{
	const struct kubeapi_vgpu_ask *a = kubeapi_podspec_vgpu(spec),
	                              *b = kubeapi_podspec_vgpu(sh);

	if (spec->nvgpu != sh->nvgpu)
		return false;
	for (uint16_t k = 0; k < spec->nvgpu; k++)
		if (a[k].nums < b[k].nums || a[k].cores < b[k].cores || a[k].mem < b[k].mem ||
		    (a[k].mem_pct != b[k].mem_pct &&
		     (a[k].mem_pct == KUBEAPI_VGPU_NO_PCT || a[k].mem_pct < b[k].mem_pct)))
			return false;
	return true;
}

/* Does a gang of n members of spec, running runtime_s, ask at least what
 * shape did? (A longer runtime may use less reserved room, never more.) */
static bool dominates(const struct kubeapi_podspec *spec, size_t n, int64_t runtime_s,
                      const struct plan_memo_shape *sh)
{
	const struct kubeapi_res *r = kubeapi_podspec_requests(sh->spec);

	if (n < sh->n || runtime_s < sh->runtime_s)
		return false;
	if (spec == sh->spec)
		return true;
	if ((spec->nvgpu || sh->spec->nvgpu) && !vgpu_dominates(spec, sh->spec))
		return false;
	for (unsigned k = 0; k < sh->spec->nrequests; k++)
		if (policy_spec_request(spec, r[k].res) < r[k].amount)
			return false;
	return true;
}

/* Drop the shapes a new one of n members of spec makes redundant: those
 * that ask at least what it asks (any gang they answer, it answers).
 * The kept shapes stay in their order, oldest first from m->next. */
static void drop_dominated(struct memo *m, const struct kubeapi_podspec *spec, size_t n,
                           int64_t runtime_s)
{
	struct plan_memo_shape keep[MEMO_SHAPES];
	struct plan_memo_shape probe = {.spec = spec, .n = (uint32_t)n, .runtime_s = runtime_s};
	unsigned nkeep = 0, oldest = m->count < MEMO_SHAPES ? 0 : m->next;

	for (unsigned j = 0; j < m->count; j++) {
		const struct plan_memo_shape *sh = &m->v[(oldest + j) % MEMO_SHAPES];

		if (!dominates(sh->spec, sh->n, sh->runtime_s, &probe))
			keep[nkeep++] = *sh;
	}
	if (nkeep == m->count)
		return;
	memcpy(m->v, keep, nkeep * sizeof(*keep));
	m->count = nkeep;
	m->next = nkeep; /* < MEMO_SHAPES: one at least was dropped */
}

const struct plan_memo_shape *plan__memo_find(struct plan_run *r, const struct policy_fit *fit,
                                              const struct kubeapi_podspec *spec, size_t n,
                                              int64_t runtime_s)
{
	const struct memo *m = fit ? idmap_get(&r->memo, (uintptr_t)fit) : NULL;

	for (unsigned k = 0; m && k < m->count; k++)
		if (dominates(spec, n, runtime_s, &m->v[k]))
			return &m->v[k];
	return NULL;
}

void plan__memo_add(struct plan_run *r, const struct policy_fit *fit,
                    const struct kubeapi_podspec *spec, size_t n, int64_t runtime_s,
                    const char *message, const struct plan_block *block)
{
	struct memo *m = idmap_get(&r->memo, (uintptr_t)fit);

	if (!m) {
		if (!(m = arena_calloc(&r->p->arena, 1, sizeof(*m))) ||
		    idmap_put(&r->memo, (uintptr_t)fit, m) < 0)
			return;
	}
	/* Keep what follows "gang ns/name: " for the gangs answered here. */
	message = plan_words_tail(message);
	drop_dominated(m, spec, n, runtime_s);
	m->v[m->next] = (struct plan_memo_shape){spec, (uint32_t)n, runtime_s, message, *block};
	m->next = (m->next + 1) % MEMO_SHAPES;
	if (m->count < MEMO_SHAPES)
		m->count++;
}
