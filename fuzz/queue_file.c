/*
 * Fuzz target: the queue file (config/): config_parse() on the input as
 * the file's text, exactly as config_load() hands over what it read.
 *
 * Checked, as config/config.h promises: 0 with a config and no error, or
 * a negative errno with no config and, for -EINVAL, at least one message;
 * messages sorted by position; parsing again without an error list gives
 * the same answer. A config that loads is walked: every cohort and queue
 * is counted against n_all_cohorts and n_all_queues, parents and depth are
 * right, weights, quotas and backfill are within their documented ranges,
 * every queue is found by its name and by each namespace it lists (names
 * and namespaces are unique), and defaultQueue names a queue.
 */
#include <errno.h>
#include <stdbool.h>

#include "config/config.h"
#include "fuzz/fuzz.h"

static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	devnull = fopen("/dev/null", "w");
	FUZZ_CHECK(devnull);
	return 0;
}

struct counts {
	size_t queues, cohorts;
};

static void check_queue(const struct config *c, const struct config_queue *q,
                        const struct config_cohort *parent)
{
	size_t i;

	FUZZ_CHECK(q->name);
	FUZZ_CHECK(q->parent == parent);
	FUZZ_CHECK(q->weight >= 1);
	FUZZ_CHECK(q->gang_timeout_ms >= 0 && q->default_runtime_ms >= 0);
	FUZZ_CHECK(q->preemption.min_runtime_ms >= 0);
	FUZZ_CHECK(config_find_queue(c, q->name) == q);
	for (i = 0; i < q->namespaces.n; i++)
		FUZZ_CHECK(config_queue_for_namespace(c, q->namespaces.v[i]) == q);
	for (i = 0; i < q->n_quotas; i++) {
		const struct config_quota *k = &q->quotas[i];

		FUZZ_CHECK(k->resource < c->resources.n);
		FUZZ_CHECK(k->flavor == CONFIG_NO_FLAVOR || k->flavor < c->n_flavors);
		FUZZ_CHECK(k->nominal >= 0 && k->borrowing_limit >= 0);
		FUZZ_CHECK(k->lending_limit == CONFIG_UNLIMITED ||
		           (k->lending_limit >= 0 && k->lending_limit <= k->nominal));
	}
}

static void check_cohort(const struct config *c, const struct config_cohort *h,
                         const struct config_cohort *parent, unsigned depth, struct counts *n)
{
	size_t i;

	FUZZ_CHECK(depth <= CONFIG_MAX_DEPTH);
	FUZZ_CHECK(h->name && h->parent == parent && h->weight >= 1);
	FUZZ_CHECK(config_find_queue(c, h->name) == NULL); /* names are shared */
	n->cohorts++;
	for (i = 0; i < h->n_cohorts; i++)
		check_cohort(c, &h->cohorts[i], h, depth + 1, n);
	for (i = 0; i < h->n_queues; i++)
		check_queue(c, &h->queues[i], h);
	n->queues += h->n_queues;
}

static void check_config(const struct config *c)
{
	struct counts n = {0, 0};
	size_t i;

	FUZZ_CHECK(c->scheduler_names.n <= CONFIG_MAX_SCHEDULER_NAMES);
	FUZZ_CHECK(c->resources.n > 0);
	FUZZ_CHECK(c->backfill.reservations >= 0 &&
	           c->backfill.reservations <= CONFIG_MAX_RESERVATIONS);
	for (i = 0; i < c->n_cohorts; i++)
		check_cohort(c, &c->cohorts[i], NULL, 1, &n);
	for (i = 0; i < c->n_queues; i++)
		check_queue(c, &c->queues[i], NULL);
	n.queues += c->n_queues;
	FUZZ_CHECK(n.queues == c->n_all_queues && n.cohorts == c->n_all_cohorts);
	if (c->default_queue)
		FUZZ_CHECK(config_find_queue(c, c->default_queue));
}

static void check_errors(const struct config_errors *errs)
{
	size_t i;

	FUZZ_CHECK(errs->n <= CONFIG_MAX_ERRORS);
	for (i = 0; i < errs->n; i++) {
		FUZZ_CHECK(errs->v[i].msg);
		if (i > 0)
			FUZZ_CHECK(errs->v[i - 1].line < errs->v[i].line ||
			           (errs->v[i - 1].line == errs->v[i].line &&
			            errs->v[i - 1].column <= errs->v[i].column));
	}
	config_errors_print(errs, devnull);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config *c = NULL, *again = NULL;
	struct config_errors errs;
	int rc, rc_again;

	config_errors_init(&errs);
	rc = config_parse("fuzz.yaml", (const char *)data, size, &c, &errs);
	FUZZ_CHECK(rc == 0 || rc == -EINVAL || rc == -EFBIG || rc == -ENOMEM);
	FUZZ_CHECK((rc == 0) == (c != NULL));
	if (rc == 0)
		FUZZ_CHECK(errs.n == 0 && errs.dropped == 0);
	if (rc == -EINVAL)
		FUZZ_CHECK(errs.n + errs.dropped > 0);
	check_errors(&errs);
	if (c)
		check_config(c);

	rc_again = config_parse("fuzz.yaml", (const char *)data, size, &again, NULL);
	FUZZ_CHECK(rc_again == rc || rc == -ENOMEM || rc_again == -ENOMEM);
	config_free(&again);
	FUZZ_CHECK(again == NULL);
	config_free(&c);
	config_errors_clear(&errs);
	return 0;
}
