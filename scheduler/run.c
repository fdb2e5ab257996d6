/*
 * `muster run` (sched.h): the loop and one cycle.
 *
 * A cycle runs `debounce_ms` after the cache reports a change (changes
 * within that window share one cycle) and at least every `period_ms`, so
 * timeouts and retries move without events. It never runs before the
 * cache has listed every kind once: a partial view would hand out room
 * that is in use.
 *
 * The planner runs on a thread of libuv's pool (struct sched_cycle), one
 * cycle at a time: at 100,000 nodes a cycle takes seconds, and the loop
 * must meanwhile read watches, renew the lease (its renew deadline is
 * 10 s) and answer the debug servers. For that time the cache is held
 * still (what the watches bring is journaled, then applied after the
 * decisions are carried out), and what the loop would change that the
 * planner reads is copied before or deferred after: the assumed binds and
 * refused evictions (copied), an assumption dropped (freed after), a
 * refused eviction's hold (dropped after), a new configuration (applied
 * only between cycles), a stop (finished after). The debug API's copy of
 * the result is taken on the thread too. The decisions are carried out on
 * the loop: the binds assumed at once, then sent, then status written,
 * then the changes that came meanwhile applied, DRAIN_BUDGET_NS of that
 * work per loop iteration, before the next cycle.
 *
 * Shutdown (SIGTERM, SIGINT): stop the timers, close the config watch,
 * the cache and the HTTP engine (in-flight binds are cancelled; a bind
 * the server already took stays, and the next leader sees it bound),
 * then let the loop drain and return 0.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/intern.h"
#include "scheduler/debug/debug.h"
#include "scheduler/sched.h"

uint64_t sched_now_ms(struct sched *s)
{
	return uv_now(s->loop);
}

/* "" once the cache is gone: the lease is released (a log line or two)
 * after the cache has closed. */
const char *sched_str(struct sched *s, uint32_t id)
{
	const char *v =
	    s->cache ? intern_str(kubeapi_model_intern(kubeapi_cache_model(s->cache)), id) : NULL;

	return v ? v : "";
}

static void on_debounce(uv_timer_t *t);

/* The least CPU time a forecast may take, whatever its share of short
 * cycles: enough for the first few dozen waiting gangs of a small
 * cluster, where a cycle takes a millisecond. */
#define FORECAST_MIN_NS 2000000

/* A forecast at most this often (the cycles between carry its answers),
 * with what the cycles since set aside: at 5,000 nodes, one every 10 s
 * reaches about ten times as far as one every cycle would. */
#define FORECAST_EVERY_S 10

void sched_kick(struct sched *s)
{
	if (!s->stopping && !uv_is_active((uv_handle_t *)&s->debounce))
		uv_timer_start(&s->debounce, on_debounce, s->opt.debounce_ms, 0);
}

static void cache_log(void *data, const char *msg)
{
	sched_log(data, "%s", msg);
}

static void cache_changed(void *data, enum kubeapi_store_kind kind)
{
	(void)kind;
	sched_kick(data);
}

/* ---- configuration ---------------------------------------------------- */

/* On the loop, once a reload's read and parse in the thread pool are
 * back: the scheduler never waits for one. A valid file is only kept
 * here; apply_config() swaps it in between cycles. */
static void on_reload(void *data, enum config_reload what, const struct config_errors *errs)
{
	struct sched *s = data;

	if (what == CONFIG_RELOAD_READY) {
		sched_log(s, "%s: valid; applies at the next cycle", s->opt.config);
		sched_kick(s);
		return;
	}
	sched_log(s, "%s: rejected, the configuration in force stays:", s->opt.config);
	for (size_t i = 0; i < errs->n; i++)
		sched_log(s, "  %s", errs->v[i].msg);
}

/* The scheduler names in force: the flags', else the configuration's. */
static void use_names(struct sched *s)
{
	const struct config_strings *c = &s->cfg->scheduler_names;

	if (s->opt.nscheduler_names) {
		memcpy(s->names, s->opt.scheduler_names, sizeof(s->names));
		s->nnames = s->opt.nscheduler_names;
		return;
	}
	s->nnames = 0;
	for (size_t k = 0; k < c->n && k < SCHED_MAX_NAMES; k++)
		s->names[s->nnames++] = c->v[k];
	if (s->nnames == 0)
		s->names[s->nnames++] = s->cfg->scheduler_name;
}

/* Between cycles: a new configuration replaces the old one whole. Usage
 * is counted again from the bound pods every cycle, so nothing admitted
 * is lost or evicted by the swap. */
static void apply_config(struct sched *s)
{
	struct config *fresh;
	struct queue_set *qs;
	int rc;

	if (!config_watch_take(s->watch, &fresh))
		return;
	if ((rc = queue_set_build(fresh, &qs)) < 0) {
		sched_log(s, "%s: cannot apply (%s); the configuration in force stays",
		          s->opt.config, strerror(-rc));
		config_free(&fresh);
		return;
	}
	queue_set_carry(qs, s->qs); /* fair sharing's memory, by name */
	queue_set_free(&s->qs);
	config_free(&s->cfg);
	s->cfg = fresh;
	s->qs = qs;
	s->config_gen++;
	use_names(s);
	sched_log(s, "%s: applied (%zu cohorts, %zu queues)", s->opt.config, s->cfg->n_all_cohorts,
	          s->cfg->n_all_queues);
}

/* ---- a cycle ---------------------------------------------------------- */

/* Seconds each gang admitted this cycle waited since its creation. A
 * gang admitted again after its binds failed counts again. O(binds): a
 * gang's binds are in a row, and only an admitted gang has any. */
static void observe_waits(struct sched *s)
{
	const struct plan *p = &s->plan;
	uint32_t last = UINT32_MAX;

	for (size_t k = 0; k < p->nbinds; k++) {
		const struct plan_gang *g = &p->gangs[p->binds[k].gang];

		if (p->binds[k].gang == last)
			continue;
		last = p->binds[k].gang;
		if (g->state == PLAN_ADMITTED && g->bound == 0 && g->submitted_s > 0)
			debug_hist_observe(&s->m.admission_wait,
			                   s->plan_now_s > g->submitted_s
			                       ? (double)(s->plan_now_s - g->submitted_s)
			                       : 0.0);
	}
}

/* How often the debug API's copy is refreshed under a stream of cycles
 * (a cycle runs at least every period_ms, so the copy is at most about
 * two seconds old): the copy costs about a tenth of a cycle
 * (bench-plan: snap_cpu_ms). */
#define SNAP_EVERY_MS 1000

/* Metrics, and the debug snapshot the cycle took, after a cycle. */
static void observe_cycle(struct sched *s)
{
	struct sched_cycle *y = &s->cyc;

	debug_hist_observe(&s->m.cycle, s->n.last_cycle_ms / 1000.0);
	s->m.preemptions += s->plan.stats.preemptions;
	s->m.pods_read += s->plan.stats.pods_read;
	s->m.pod_table_rebuilds += s->plan.stats.pods_rebuilt;
	observe_waits(s);
	if (y->want_snap && y->snap_rc < 0)
		sched_logl(s, SCHED_WARN, "debug snapshot: %s", strerror(-y->snap_rc));
	if (!y->snap.cycle)
		return;
	snap_free(&s->snap);
	s->snap = y->snap;
	y->snap = (struct snap){0};
	s->snap_at_ms = sched_now_ms(s);
}

/* The ids of the scheduler names in force into ids (in->schedulers). A
 * name no pod has yet has no id: the cycle still runs, so usage, nodes
 * and the debug API are current. */
static void scheduler_ids(const struct sched *s, struct plan_input *in, uint32_t *ids)
{
	const struct intern *strs = kubeapi_model_intern(in->model);

	for (unsigned k = 0; k < s->nnames; k++) {
		uint32_t id = intern_find(strs, s->names[k], strlen(s->names[k]));

		if (id)
			ids[in->nschedulers++] = id;
		in->volcano_groups |= strcmp(s->names[k], "volcano") == 0;
	}
	in->schedulers = ids;
}

/* The planner's input: the cache's stores, and four maps copied here
 * for it, since the loop changes the originals while the cycle runs
 * (cycle_free() frees them). 0 or -ENOMEM. */
static int cycle_input(struct sched *s)
{
	const struct kubeapi_cache *c = s->cache;
	const struct idmap_slot *slot;
	struct sched_cycle *y = &s->cyc;
	struct plan_input *in = &y->in;

	*in = (struct plan_input){
	    .model = kubeapi_cache_model(s->cache),
	    .nodes = kubeapi_cache_store(c, KUBEAPI_STORE_NODES),
	    .pods = kubeapi_cache_store(c, KUBEAPI_STORE_PODS),
	    .groups = kubeapi_cache_store(c, KUBEAPI_STORE_PODGROUPS),
	    .vcgroups = kubeapi_cache_store(c, KUBEAPI_STORE_VCJOBS),
	    .natgroups = kubeapi_cache_store(c, KUBEAPI_STORE_NATIVEPGS),
	    .workloads = kubeapi_cache_store(c, KUBEAPI_STORE_WORKLOADS),
	    .priorityclasses = kubeapi_cache_store(c, KUBEAPI_STORE_PRIORITYCLASSES),
	    .qs = s->qs,
	    .config_gen = s->config_gen,
	    .assumed = &y->assumed,
	    .assumed_vgpu = &y->vgpu,
	    .backoff = &y->backoff,
	    .now_s = (int64_t)time(NULL),
	    .pdbs = kubeapi_cache_store(c, KUBEAPI_STORE_PDBS),
	    .refused = &y->refused,
	};
	scheduler_ids(s, in, y->ids);
	/* The planner wants pod -> node; the assumed map holds more. The
	 * shares stay the assumption's: one dropped meanwhile is freed
	 * after the cycle (bind.c). */
	IDMAP_FOREACH(&s->assumed, i, slot) {
		const struct sched_assumed *e = slot->value;

		if (idmap_put(&y->assumed, slot->key, (void *)(uintptr_t)e->node) < 0 ||
		    (e->vgpu && idmap_put(&y->vgpu, slot->key, e->vgpu) < 0))
			return -ENOMEM;
	}
	IDMAP_FOREACH(&s->refused, i, slot)
		if (idmap_put(&y->refused, slot->key, slot->value) < 0)
			return -ENOMEM;
	return sched_backoff_map(s, &y->backoff);
}

static void cycle_free(struct sched_cycle *y)
{
	snap_free(&y->snap);
	idmap_free(&y->assumed);
	idmap_free(&y->vgpu);
	idmap_free(&y->backoff);
	idmap_free(&y->refused);
}

/* The cycle's decisions carried out: evictions sent, binds assumed and
 * queued (on_drain() sends them, then writes timeouts and status); then
 * metrics and a line when it did something. */
static void carry_out(struct sched *s, uint64_t t0)
{
	sched_evict_all(s);
	sched_bind_all(s);
	s->cyc.status_due = true;
	s->n.cycles++;
	s->n.last_cycle_ms = (double)(uv_hrtime() - t0) / 1e6;
	observe_cycle(s);
	if (s->plan.nbinds || s->plan.nevictions)
		sched_log(s,
		          "cycle %llu: %zu nodes, %zu pods, %zu pending gangs, %zu admitted, %zu "
		          "binds, %zu evictions, %zu reservations, %.1f ms",
		          (unsigned long long)s->n.cycles, s->plan.stats.nodes, s->plan.stats.pods,
		          s->plan.stats.pending_gangs, s->plan.stats.admitted_gangs, s->plan.nbinds,
		          s->plan.nevictions, s->plan.stats.reservations, s->n.last_cycle_ms);
}

static bool leading(struct sched *s)
{
	return s->leader && (!s->lease || sched_lease_leader(s->lease));
}

void sched_hold_drop(struct sched *s, uint64_t key)
{
	if (!s->cyc.running)
		plan_hold_drop(&s->plan_keep, key);
	else if (idmap_put(&s->cyc.drops, key, (void *)1) < 0)
		sched_logl(s, SCHED_WARN, "out of memory: a refused eviction's hold stays a cycle");
}

/* On the thread pool: the planner, the debug API's copy of its result
 * when one is due, the gangs' waits, and which status differs from the
 * plan; nothing else. */
static void cycle_work(uv_work_t *w)
{
	struct sched *s = w->data;
	struct sched_cycle *y = &s->cyc;
	struct snap_input in = {&s->plan, y->in.qs, y->cfg, y->in.model, y->number, y->in.now_s};

	y->rc = plan_cycle(&s->plan, &y->in, &s->plan_keep);
	if (y->rc == 0 && y->want_snap)
		y->snap_rc = snap_take(&in, &y->snap);
	if (y->rc == 0 && (y->todo_rc = sched_timeouts_find(s, y->now_ms, &y->timeouts)) == 0)
		y->todo_rc = sched_status_todo(s, &y->todo);
	if (s->opt.cycle_delay_ms)
		uv_sleep(s->opt.cycle_delay_ms);
}

/* What one loop iteration spends applying the changes that came during a
 * cycle: after a long one they are many, and applying them at once would
 * stall the loop (watch reads, the lease) as the cycle itself used to. */
#define DRAIN_BUDGET_NS (5 * 1000 * 1000)

/* After the cycle's binds: the gangs that timed out, and status that
 * differs from the plan. On the server after the binds, as the engine
 * keeps order: a PodGroup does not say its gang is placed before its
 * first bind has gone out. */
static void write_status(struct sched *s)
{
	struct sched_cycle *y = &s->cyc;

	y->status_due = false;
	if (!leading(s))
		return;
	if (y->todo_rc < 0) {
		sched_logl(s, SCHED_WARN, "timeouts and status: %s", strerror(-y->todo_rc));
		return;
	}
	sched_timeouts_say(s, &y->timeouts);
	sched_status_write(s, &y->todo);
}

/* First the cycle's binds and status, sent while the cache is still held
 * as the cycle saw it (they point into it); then what came meanwhile. */
static void on_drain(uv_idle_t *h)
{
	struct sched *s = h->data;

	if (!sched_bind_send(s, leading(s), DRAIN_BUDGET_NS))
		return;
	if (s->cyc.status_due)
		write_status(s);
	if (!kubeapi_cache_release(s->cache, DRAIN_BUDGET_NS))
		return;
	uv_idle_stop(h);
	s->draining = false;
	if (s->cyc.again) {
		s->cyc.again = false;
		sched_kick(s);
	}
}

static void close_all(struct sched *s);

/* The kinds whose changed keys the planner is told (and clears once a
 * cycle has them): what it keeps across cycles hangs on them. */
static const enum kubeapi_store_kind fed[] = {
    KUBEAPI_STORE_PODS,      KUBEAPI_STORE_PODGROUPS, KUBEAPI_STORE_VCJOBS,
    KUBEAPI_STORE_NATIVEPGS, KUBEAPI_STORE_WORKLOADS, KUBEAPI_STORE_PRIORITYCLASSES,
    KUBEAPI_STORE_NODES,
};

/* The PodGroups changed since the last cycle, per store, into in; true
 * when they are known and no Workload or PriorityClass changed either:
 * the planner then keeps the facts of every other gang (policy/gangs.c). */
static bool group_changes(const struct sched *s, struct plan_input *in)
{
	static const enum kubeapi_store_kind groups[3] = {
	    KUBEAPI_STORE_PODGROUPS, KUBEAPI_STORE_VCJOBS, KUBEAPI_STORE_NATIVEPGS};
	static const enum kubeapi_store_kind others[2] = {KUBEAPI_STORE_WORKLOADS,
	                                                  KUBEAPI_STORE_PRIORITYCLASSES};
	const uint64_t *keys;
	bool known = true;
	size_t n;

	for (size_t k = 0; k < 3; k++)
		known = kubeapi_cache_changes(s->cache, groups[k], &in->group_changes[k],
		                              &in->ngroup_changes[k]) &&
		        known;
	for (size_t k = 0; k < 2; k++)
		known = kubeapi_cache_changes(s->cache, others[k], &keys, &n) && n == 0 && known;
	return known;
}

/* Back on the loop: what waited for the cycle, its decisions carried out
 * (with the cache as the planner saw it: the plan points into it), then
 * the changes that came meanwhile applied. A leader that lost its lease
 * meanwhile carries out nothing; a stop that came meanwhile goes on. */
static void cycle_done(uv_work_t *w, int status)
{
	struct sched *s = w->data;
	struct sched_cycle *y = &s->cyc;
	const struct idmap_slot *sl;

	y->running = false;
	/* The planner filed them (or, having failed, reads every pod next
	 * time): before the release applies what came meanwhile. A cycle
	 * that never ran (cancelled) filed nothing: the next one does. */
	if (status == 0)
		for (size_t k = 0; k < sizeof(fed) / sizeof(fed[0]); k++)
			kubeapi_cache_changes_clear(s->cache, fed[k]);
	if (y->in.check_state && s->plan.stats.state_mismatches)
		sched_logl(s, SCHED_WARN,
		           "check-state: %zu kept records (pods, gangs' facts, node rows) unlike a "
		           "rebuild's",
		           s->plan.stats.state_mismatches);
	sched_assumed_bury(s);
	IDMAP_FOREACH(&y->drops, i, sl)
		plan_hold_drop(&s->plan_keep, sl->key);
	idmap_free(&y->drops);
	if (s->stopping) {
		cycle_free(y);
		close_all(s);
		return;
	}
	if (status < 0 || y->rc < 0)
		sched_log(s, "cycle failed: %s", strerror(status < 0 ? -status : -y->rc));
	else if (leading(s)) {
		s->plan_now_s = y->in.now_s;
		carry_out(s, y->t0);
		sched_usage_write(s);
	}
	cycle_free(y);
	s->draining = true;
	uv_idle_start(&s->drain, on_drain);
}

/* Start a cycle on the thread pool, so that the loop keeps reading
 * watches, renewing the lease and answering the debug servers however
 * long it takes (seconds at 100,000 nodes: bench-plan). */
static void cycle(struct sched *s)
{
	struct sched_cycle *y = &s->cyc;
	int rc;

	if (y->running || s->draining) {
		y->again = true;
		return;
	}
	/* A standby keeps its cache warm and decides nothing; a leader past
	 * its renew deadline neither, even before the lease says so. */
	if (s->stopping || !leading(s) || !kubeapi_cache_synced(s->cache) || !sched_usage_ready(s))
		return;
	y->t0 = uv_hrtime();
	y->number = s->n.cycles + 1;
	y->want_snap =
	    s->httpd && (!s->snap.cycle || sched_now_ms(s) >= s->snap_at_ms + SNAP_EVERY_MS);
	y->snap_rc = 0;
	y->todo_rc = 0;
	y->now_ms = sched_now_ms(s);
	apply_config(s);
	sched_assumed_sweep(s);
	sched_status_sweep(s); /* a slice a cycle */
	if (s->n.cycles % 60 == 0)
		sched_evict_sweep(s);
	if ((rc = cycle_input(s)) < 0) {
		sched_log(s, "cycle not started: %s", strerror(-rc));
		cycle_free(y);
		return;
	}
	y->work.data = s;
	y->cfg = s->cfg;
	kubeapi_cache_hold(s->cache);
	/* The pods changed since the last cycle: the planner keeps the rest
	 * of its pod table (policy/podtab.c). Cleared once it has them. */
	y->in.pods_known = kubeapi_cache_changes(s->cache, KUBEAPI_STORE_PODS, &y->in.pod_changes,
	                                         &y->in.npod_changes);
	y->in.groups_known = group_changes(s, &y->in);
	/* And the nodes: the planner keeps its node table while they stand. */
	y->in.nodes_known = kubeapi_cache_changes(s->cache, KUBEAPI_STORE_NODES,
	                                          &y->in.node_changes, &y->in.nnode_changes);
	y->in.check_state = s->opt.check_state;
	y->in.forecast = !s->opt.forecast_off;
	y->in.forecast_pct = (uint8_t)s->opt.forecast_share;
	y->in.forecast_min_ns = FORECAST_MIN_NS;
	y->in.forecast_every_s = FORECAST_EVERY_S;
	if ((rc = uv_queue_work(s->loop, &y->work, cycle_work, cycle_done)) < 0) {
		sched_log(s, "cycle not started: %s", uv_strerror(rc));
		kubeapi_cache_release(s->cache, UINT64_MAX);
		cycle_free(y);
		return;
	}
	y->running = true;
}

static void on_debounce(uv_timer_t *t)
{
	cycle(t->data);
}

static void on_period(uv_timer_t *t)
{
	cycle(t->data);
}

/* ---- the loop's stalls ------------------------------------------------ */

/* A stall longer than this is logged: the lease's renew deadline is 10 s. */
#define STALL_LOG_S 1.0

/* Just before the loop waits for I/O: the time since the last wait ended
 * is the time since the last prepare less what the loop spent waiting in
 * between (libuv's idle time), so every callback of the iteration counts,
 * I/O callbacks included. Costs two clock reads an iteration. */
static void on_stall(uv_prepare_t *h)
{
	struct sched *s = h->data;
	uint64_t now = uv_hrtime(), idle = uv_metrics_idle_time(s->loop);

	if (s->stall_ns) {
		uint64_t wall = now - s->stall_ns, quiet = idle - s->stall_idle_ns;
		double busy = wall > quiet ? (double)(wall - quiet) / 1e9 : 0.0;

		debug_hist_observe(&s->m.stall, busy);
		if (busy > s->m.stall_max)
			s->m.stall_max = busy;
		if (busy > STALL_LOG_S)
			sched_logl(
			    s, SCHED_WARN,
			    "event loop busy %.0f ms without reading the network (last cycle "
			    "%.0f ms)",
			    busy * 1e3, s->n.last_cycle_ms);
	}
	s->stall_ns = now;
	s->stall_idle_ns = idle;
}

/* ---- lifecycle -------------------------------------------------------- */

static void closed_one(void *data)
{
	struct sched *s = data;

	s->closing--;
}

static void closed_handle(uv_handle_t *h)
{
	closed_one(h->data);
}

/* Close *hp, counted in s->closing. */
static void close_engine(struct sched *s, struct kubeapi_http **hp)
{
	if (*hp) {
		s->closing++;
		kubeapi_http_close(hp, closed_one, s);
	}
}

/* The cache is closed: its engine may go. */
static void cache_closed(void *data)
{
	struct sched *s = data;

	closed_one(s);
	close_engine(s, &s->watch_http);
}

/* The lease is closed (released, when we led): now its engine. */
static void lease_closed(void *data)
{
	struct sched *s = data;

	if (s->lease_http) {
		s->closing++;
		kubeapi_http_close(&s->lease_http, closed_one, s);
	}
	closed_one(s);
}

/* Stop: at once, or when the cycle in flight is back (cycle_done()): it
 * reads the cache and the plan, which closing frees. */
static void stop(struct sched *s)
{
	if (s->stopping)
		return;
	s->stopping = true;
	sched_log(s, "stopping: %llu cycles, %llu binds sent, %llu bound, %llu failed",
	          (unsigned long long)s->n.cycles, (unsigned long long)s->n.binds_sent,
	          (unsigned long long)s->n.binds_ok, (unsigned long long)s->n.binds_failed);
	if (!s->cyc.running)
		close_all(s);
}

static void close_all(struct sched *s)
{
	if (s->started) {
		s->closing += 6;
		uv_close((uv_handle_t *)&s->drain, closed_handle);
		uv_close((uv_handle_t *)&s->stall, closed_handle);
		uv_close((uv_handle_t *)&s->debounce, closed_handle);
		uv_close((uv_handle_t *)&s->period, closed_handle);
		uv_close((uv_handle_t *)&s->sigterm, closed_handle);
		uv_close((uv_handle_t *)&s->sigint, closed_handle);
	}
	config_watch_stop(&s->watch);
	if (s->httpd) {
		s->closing++;
		httpd_close(&s->httpd, closed_one, s);
	}
	if (s->probe) {
		s->closing++;
		httpd_close(&s->probe, closed_one, s);
	}
	if (s->cache) {
		s->closing++;
		kubeapi_cache_close(&s->cache, cache_closed, s);
	} else {
		close_engine(s, &s->watch_http);
	}
	/* Writes still queued are cancelled, not drained: a bind the server
	 * has not taken is the next leader's to make. A leader releases the
	 * lease through its own engine, which closes after it
	 * (lease_closed). */
	close_engine(s, &s->http);
	if (s->lease) {
		s->closing++;
		sched_lease_close(&s->lease, lease_closed, s);
	} else {
		close_engine(s, &s->lease_http);
	}
}

static void on_signal(uv_signal_t *h, int signum)
{
	struct sched *s = h->data;

	sched_log(s, "%s received", signum == SIGTERM ? "SIGTERM" : "SIGINT");
	stop(s);
}

/* The User-Agent: "muster", and with leader election the identity, so
 * the server's audit log (and a proxy) tells replicas apart. */
static void user_agent(const struct sched *s, char *out, size_t cap)
{
	if (s->opt.leader_elect && s->opt.identity)
		snprintf(out, cap, "muster/%.100s", s->opt.identity);
	else
		snprintf(out, cap, "muster");
}

/*
 * Three engines, each with connections of its own:
 *   - writes (binds, status, Events, evictions): a burst of binds is as
 *     fast as the number in flight over the server's answer time (about
 *     300 ms each on a loaded 2-core test cluster): 8,000 binds went at
 *     446 and 398/s with 128 in flight, 679 and 580/s with 256
 *     (bench/README.md, 29 Nov). 32 streams a connection put them on
 *     eight connections, which the server serves in parallel
 *     (kubeapi/http.h says what one connection caps); over HTTP/1.1 the
 *     engine lifts its cap to 64. Cost: about 12 MiB more at the peak of
 *     the burst (46 to 58 MiB). On a cluster with API Priority and
 *     Fairness, the server queues what its share for us does not take,
 *     and answers 429 past that, which the engine retries with backoff.
 *   - the cache's lists and watches: a watch holds its connection for as
 *     long as it runs, one per kind over HTTP/1.1; sharing the writes'
 *     eight, nine watches left none for binds or the lease (issue 55).
 *   - the lease: its renewal never waits behind binds or watches, on
 *     HTTP/1.1 and HTTP/2 alike, as kube-scheduler gives leader election
 *     a client of its own. One connection, idle but for a request every
 *     retry period.
 */
static int connect_api(struct sched *s)
{
	char err[512], ua[128];
	struct kubeapi_http_options wopt = {.write_qps = 5000,
	                                    .write_burst = 5000,
	                                    .max_inflight = 256,
	                                    .streams_per_conn = 32,
	                                    .observe = debug_metrics_api,
	                                    .observe_data = &s->m,
	                                    .user_agent = ua};
	/* Reads only: lists and one watch per kind, eight streams a
	 * connection, so the first lists of a large cluster (2,140 nodes,
	 * 4,000 pods) go over a few connections, as they did beside the
	 * writes; all on one, one run in three of bench-e2e's throughput
	 * phase waited 31 s (an attempt's timeout) for its first cycle (7
	 * Dec, not explained). Over HTTP/1.1, a connection each. */
	struct kubeapi_http_options ropt = {.max_inflight = 64,
	                                    .streams_per_conn = 8,
	                                    .observe = debug_metrics_api,
	                                    .observe_data = &s->m,
	                                    .user_agent = ua};
	struct kubeapi_http_options lopt = {.max_inflight = 4, .user_agent = ua};
	int rc;

	user_agent(s, ua, sizeof(ua));
	if (s->opt.kubeconfig)
		rc = kubeapi_conn_from_kubeconfig(s->opt.kubeconfig, s->opt.context, &s->conn, err,
		                                  sizeof(err));
	else
		rc = kubeapi_conn_in_cluster(NULL, &s->conn, err, sizeof(err));
	if (rc < 0) {
		sched_log(s, "%s", err);
		return rc;
	}
	if ((rc = kubeapi_http_new(s->loop, &s->conn, &wopt, &s->http)) < 0 ||
	    (rc = kubeapi_http_new(s->loop, &s->conn, &ropt, &s->watch_http)) < 0)
		return rc;
	if (s->opt.leader_elect)
		rc = kubeapi_http_new(s->loop, &s->conn, &lopt, &s->lease_http);
	return rc;
}

/* What the debug servers show of s (struct debug_source). */
static void debug_view(void *data, struct debug_view *v)
{
	const struct sched *s = data;

	v->cache = s->cache;
	v->leader = s->leader;
	v->elected = s->lease != NULL;
	v->holder = s->lease ? sched_lease_holder(s->lease) : NULL;
	v->cycles = s->n.cycles;
	v->binds_ok = s->n.binds_ok;
	v->binds_failed = s->n.binds_failed;
	v->binds_retried = s->n.binds_retried;
	v->write_errors = s->n.write_errors;
	v->events_dropped = s->n.events_dropped;
	v->evictions = s->n.evictions;
	v->m = &s->m;
	v->snap = s->snap.cycle ? &s->snap : NULL;
}

static void httpd_log(void *data, const char *msg)
{
	sched_logl(data, SCHED_WARN, "debug server: %s", msg);
}

/* Start one of the HTTP servers and say where it listens (or why not).
 * `what` names it in the log ("debug server"); tests read the port there. */
static int serve(struct sched *s, const struct httpd_options *o, const char *what,
                 const char *extra, struct httpd **out)
{
	char err[512];
	int rc;

	if ((rc = httpd_start(s->loop, o, out, err, sizeof(err))) < 0) {
		sched_logl(s, SCHED_ERROR, "%s on %s: %s", what, o->addr, err);
		return rc;
	}
	sched_log(s, "%s on %s (port %d)%s", what, o->addr, httpd_port(*out), extra);
	return 0;
}

static int start_debug(struct sched *s)
{
	struct httpd_options o = {.addr = s->opt.debug_addr,
	                          .cert_file = s->opt.debug_cert,
	                          .key_file = s->opt.debug_key,
	                          .token_file = s->opt.debug_token,
	                          .handler = debug_handle,
	                          .data = &s->debug,
	                          .log = httpd_log,
	                          .log_data = s};

	if (!s->opt.debug_addr)
		return 0;
	return serve(s, &o, "debug server", s->opt.debug_cert ? ", TLS" : "", &s->httpd);
}

static void probe_log(void *data, const char *msg)
{
	sched_logl(data, SCHED_WARN, "probe server: %s", msg);
}

/* The kubelet's probes on a listener of their own, plain HTTP on any
 * address (they reveal nothing), so that no client of the debug server
 * can starve them. Small: probes send one short head at once. */
static int start_probe(struct sched *s)
{
	struct httpd_options o = {.addr = s->opt.probe_addr,
	                          .public_plain = 1,
	                          .max_clients = 32,
	                          .max_per_peer = 8,
	                          .max_head = 4096,
	                          .timeout_ms = 5000,
	                          .head_timeout_ms = 2000,
	                          .handler = debug_probe_handle,
	                          .data = &s->debug,
	                          .log = probe_log,
	                          .log_data = s};

	if (!s->opt.probe_addr)
		return 0;
	return serve(s, &o, "probe server", "", &s->probe);
}

/* ---- leader election (lease.h) ----------------------------------------- */

static void lease_log(void *data, const char *msg)
{
	sched_log(data, "%s", msg);
}

/* Leading: cycles run from the next one on (a standby has assumed
 * nothing, so nothing stale is acted on). Lost after leading: exit 1, as
 * kube-scheduler does, so that no decision made as leader is acted on
 * afterwards; the restart comes back as a standby. */
static void lease_changed(void *data, bool leader)
{
	struct sched *s = data;

	s->leader = leader;
	if (leader) {
		sched_log(s, "became leader as %s", s->opt.identity);
		sched_usage_read(s); /* the last leader's memory, before a cycle */
		sched_kick(s);
		return;
	}
	/* Fenced at once, whatever the cycle is doing: no write queued,
	 * retrying or decided later goes out (a standby may lead from the
	 * lease's expiry on); the cycle in flight is only waited for. */
	kubeapi_http_fence(s->http);
	sched_logl(s, SCHED_ERROR, "lost leadership; writes fenced, stopping (exit 1)");
	s->exit_code = 1;
	stop(s);
}

static int start_lease(struct sched *s)
{
	struct sched_lease_options o = {.ns = s->opt.lease_namespace,
	                                .name = s->opt.lease_name,
	                                .identity = s->opt.identity,
	                                .duration_ms = s->opt.lease_duration_ms,
	                                .renew_ms = s->opt.renew_ms,
	                                .retry_ms = s->opt.retry_ms,
	                                .changed = lease_changed,
	                                .log = lease_log,
	                                .data = s};

	if (!s->opt.leader_elect)
		return 0;
	s->leader = false;
	/* Events say which instance decided: its identity. */
	snprintf(s->instance, sizeof(s->instance), "%s", s->opt.identity ? s->opt.identity : "");
	sched_log(s, "leader election on lease %s/%s as %s: standing by until elected",
	          o.ns ? o.ns : "?", o.name ? o.name : "?", o.identity ? o.identity : "?");
	return sched_lease_start(s->loop, s->lease_http, &o, &s->lease);
}

static unsigned fed_kinds(void)
{
	unsigned bits = 0;

	for (size_t k = 0; k < sizeof(fed) / sizeof(fed[0]); k++)
		bits |= 1u << fed[k];
	return bits;
}

static int start(struct sched *s)
{
	struct config_errors errs;
	struct kubeapi_cache_options copt = {.informer = {.max_object = s->opt.max_object},
	                                     .log = cache_log,
	                                     .changed = cache_changed,
	                                     .data = s,
	                                     .track_changes = fed_kinds()};
	int rc;

	config_errors_init(&errs);
	rc = config_watch_start(s->loop, s->opt.config, 1000, on_reload, s, &s->cfg, &errs,
	                        &s->watch);
	if (rc < 0) {
		for (size_t i = 0; i < errs.n; i++)
			sched_log(s, "%s", errs.v[i].msg);
		config_errors_clear(&errs);
		return rc;
	}
	if ((rc = queue_set_build(s->cfg, &s->qs)) < 0)
		return rc;
	use_names(s);
	if ((rc = connect_api(s)) < 0)
		return rc;
	if ((rc = kubeapi_cache_new(s->loop, s->watch_http, &copt, &s->cache)) < 0 ||
	    (rc = kubeapi_cache_start(s->cache)) < 0)
		return rc;
	if ((rc = start_lease(s)) < 0)
		return rc;
	if (!s->opt.leader_elect)
		sched_usage_read(s); /* it leads from the start */
	uv_timer_init(s->loop, &s->debounce);
	uv_timer_init(s->loop, &s->period);
	uv_signal_init(s->loop, &s->sigterm);
	uv_signal_init(s->loop, &s->sigint);
	uv_prepare_init(s->loop, &s->stall);
	uv_idle_init(s->loop, &s->drain);
	buf_init(&s->bindq, SCHED_LIST_MAX);
	buf_init(&s->cyc.todo, SCHED_LIST_MAX);
	buf_init(&s->cyc.timeouts, SCHED_LIST_MAX);
	s->drain.data = s->stall.data = s->debounce.data = s->period.data = s->sigterm.data =
	    s->sigint.data = s;
	s->started = true;
	if ((rc = start_debug(s)) < 0 || (rc = start_probe(s)) < 0)
		return rc;
	uv_prepare_start(&s->stall, on_stall);
	uv_timer_start(&s->period, on_period, s->opt.period_ms, s->opt.period_ms);
	uv_signal_start(&s->sigterm, on_signal, SIGTERM);
	uv_signal_start(&s->sigint, on_signal, SIGINT);
	sched_log(s, "started: scheduler name%s %s%s%s%s, %zu queues, API server %s",
	          s->nnames > 1 ? "s" : "", s->names[0], s->nnames > 1 ? ", " : "",
	          s->nnames > 1 ? s->names[1] : "", s->nnames > 2 ? ", ..." : "",
	          s->cfg->n_all_queues, s->conn.server);
	return 0;
}

static void defaults(struct sched_options *o)
{
	if (!o->debounce_ms)
		o->debounce_ms = 20;
	if (!o->period_ms)
		o->period_ms = 1000;
	if (!o->status_per_cycle)
		o->status_per_cycle = 1000;
	if (!o->forecast_share)
		o->forecast_share = 15;
}

int sched_run(const struct sched_options *opt)
{
	struct sched *s = calloc(1, sizeof(*s));
	uv_loop_t loop;
	int rc;

	/* A debug client that goes away mid-response must not kill us:
	 * libuv writes with write(2). */
	signal(SIGPIPE, SIG_IGN);
	if (!s || uv_loop_init(&loop) < 0) {
		free(s);
		return 1;
	}
	uv_loop_configure(&loop, UV_METRICS_IDLE_TIME); /* on_stall()'s */
	s->loop = &loop;
	s->opt = *opt;
	defaults(&s->opt);
	debug_metrics_init(&s->m);
	s->debug = (struct debug_source){.view = debug_view, .data = s};
	s->leader = true; /* until leader election says otherwise */
	snprintf(s->instance, sizeof(s->instance), "muster-%ld", (long)getpid());
	rc = start(s);
	if (rc < 0) {
		sched_log(s, "cannot start: %s", strerror(-rc));
		s->exit_code = 1;
		if (s->watch || s->cache)
			stop(s);
	}
	uv_run(&loop, UV_RUN_DEFAULT);
	/* What start() opened before it failed, if it did: the engines,
	 * whose cancelled calls report back before they free themselves. */
	if (s->http || s->watch_http || s->lease_http) {
		close_engine(s, &s->http);
		close_engine(s, &s->watch_http);
		close_engine(s, &s->lease_http);
		uv_run(&loop, UV_RUN_DEFAULT);
	}
	sched_assumed_free(s);
	sched_evicted_free(s);
	buf_free(&s->cyc.todo);
	buf_free(&s->cyc.timeouts);
	idmap_free(&s->written);
	idmap_free(&s->shaped);
	idmap_free(&s->groups);
	idmap_free(&s->group_shaped);
	sched_owed_free(s);
	sched_waits_free(s);
	plan_free(&s->plan);
	plan_memory_free(&s->plan_keep);
	snap_free(&s->snap);
	queue_set_free(&s->qs);
	config_free(&s->cfg);
	kubeapi_conn_free(&s->conn);
	uv_loop_close(&loop);
	rc = s->exit_code;
	free(s);
	return rc;
}
