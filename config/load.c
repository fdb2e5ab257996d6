/*
 * Reading a configuration: the file (at most CONFIG_MAX_FILE bytes), the
 * guard against nesting that would make libyaml slow or large
 * (base/yaml_guard.h), the libyaml document, the walk by the tables of
 * model.c, the checks across the document (names.c), then an index of
 * every queue for lookups. Also freeing, the lookups and
 * `muster check-config`.
 *
 * Cost. The file is read whole into one buffer; the guard scans it and
 * parses it once for events (about half the time of the load), then
 * libyaml builds the whole document from it; both are freed before
 * config_parse() returns. The config holds one allocation per string and
 * per list.
 */
#include "config/config.h"
#include "config/config_internal.h"
#include "base/yaml_guard.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- freeing ----------------------------------------------------------- */

void config__free_strings(struct config_strings *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
}

void config__free_queue(struct config_queue *q)
{
	free(q->name);
	config__free_strings(&q->namespaces);
	free(q->quotas);
}

void config__free_cohort(struct config_cohort *c)
{
	for (size_t i = 0; i < c->n_cohorts; i++)
		config__free_cohort(&c->cohorts[i]);
	for (size_t i = 0; i < c->n_queues; i++)
		config__free_queue(&c->queues[i]);
	free(c->name);
	free(c->cohorts);
	free(c->queues);
}

static void free_flavor(struct config_flavor *f)
{
	for (size_t i = 0; i < f->n_labels; i++) {
		free(f->labels[i].key);
		free(f->labels[i].value);
	}
	free(f->labels);
	free(f->name);
}

void config_free(struct config **cp)
{
	struct config *c = *cp;

	if (!c)
		return;
	for (size_t i = 0; i < c->n_flavors; i++)
		free_flavor(&c->flavors[i]);
	for (size_t i = 0; i < c->n_cohorts; i++)
		config__free_cohort(&c->cohorts[i]);
	for (size_t i = 0; i < c->n_queues; i++)
		config__free_queue(&c->queues[i]);
	free(c->flavors);
	free(c->cohorts);
	free(c->queues);
	free(c->all_queues);
	free(c->scheduler_name);
	config__free_strings(&c->scheduler_names);
	free(c->default_queue);
	config__free_strings(&c->resources);
	config__free_strings(&c->topology.levels);
	free(c);
	*cp = NULL;
}

/* ---- the index of queues ----------------------------------------------- */

/* Counts (when all is NULL) or collects the queues under cohort c. */
static void index_cohort(struct config *cfg, const struct config_cohort *c,
                         struct config_queue **all)
{
	cfg->n_all_cohorts++;
	for (size_t i = 0; i < c->n_queues; i++) {
		if (all)
			all[cfg->n_all_queues] = &c->queues[i];
		cfg->n_all_queues++;
	}
	for (size_t i = 0; i < c->n_cohorts; i++)
		index_cohort(cfg, &c->cohorts[i], all);
}

static void index_all(struct config *cfg, struct config_queue **all)
{
	cfg->n_all_cohorts = 0;
	cfg->n_all_queues = 0;
	for (size_t i = 0; i < cfg->n_cohorts; i++)
		index_cohort(cfg, &cfg->cohorts[i], all);
	for (size_t i = 0; i < cfg->n_queues; i++) {
		if (all)
			all[cfg->n_all_queues] = &cfg->queues[i];
		cfg->n_all_queues++;
	}
}

static int build_index(struct config *cfg)
{
	index_all(cfg, NULL);
	cfg->all_queues = calloc(cfg->n_all_queues ? cfg->n_all_queues : 1, sizeof(void *));
	if (!cfg->all_queues)
		return -ENOMEM;
	index_all(cfg, cfg->all_queues);
	return 0;
}

/* ---- parsing ----------------------------------------------------------- */

/* Records libyaml's problem at its mark; returns the load's result. */
static int parser_error(struct config__loader *l, const yaml_parser_t *p)
{
	const char *problem = p->problem ? p->problem : "unreadable input";

	if (p->context)
		config__error_at(l, p->problem_mark, "invalid YAML: %s %s started at %zu:%zu",
		                 problem, p->context, p->context_mark.line + 1,
		                 p->context_mark.column + 1);
	else
		config__error_at(l, p->problem_mark, "invalid YAML: %s", problem);
	return p->error == YAML_MEMORY_ERROR ? -ENOMEM : -EINVAL;
}

/* Loads the one document of text into l->doc. A second document is an
 * error: it would be silently ignored otherwise. */
static int load_document(struct config__loader *l, const char *text, size_t len)
{
	yaml_parser_t parser;
	yaml_document_t extra;
	int rc = 0;

	if (!yaml_parser_initialize(&parser))
		return -ENOMEM;
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &l->doc)) {
		rc = parser_error(l, &parser);
		goto out;
	}
	if (!yaml_parser_load(&parser, &extra)) {
		rc = parser_error(l, &parser);
		yaml_document_delete(&l->doc);
		goto out;
	}
	if (yaml_document_get_root_node(&extra))
		config__error_at(l, extra.start_mark,
		                 "a second YAML document; expected exactly one");
	yaml_document_delete(&extra);
out:
	yaml_parser_delete(&parser);
	return rc;
}

/* What a GPU cluster puts under quota when the file does not say. */
static int set_default_resources(struct config_strings *r)
{
	static const char *const names[] = {"cpu", "memory", "nvidia.com/gpu"};
	size_t n = sizeof(names) / sizeof(names[0]);

	r->v = calloc(n, sizeof(*r->v));
	if (!r->v)
		return -ENOMEM;
	for (r->n = 0; r->n < n; r->n++)
		if (!(r->v[r->n] = strdup(names[r->n])))
			return -ENOMEM;
	return 0;
}

/* Walks the document into l->cfg; returns how it went. */
static int walk(struct config__loader *l)
{
	yaml_node_t *root = yaml_document_get_root_node(&l->doc);

	if (!root) {
		config__error(l, NULL, "the file is empty; expected a mapping");
		return -EINVAL;
	}
	l->cfg = calloc(1, sizeof(*l->cfg));
	if (!l->cfg)
		return -ENOMEM;
	l->cfg->scheduler_name = strdup("muster");
	l->cfg->backfill.reservations = 1; /* EASY backfill */
	if (!l->cfg->scheduler_name || set_default_resources(&l->cfg->resources) < 0)
		return -ENOMEM;
	config__walk(l, root, &config__root_table, l->cfg);
	if (root->type == YAML_MAPPING_NODE && !l->nomem)
		config__check_names(l, root);
	if (l->nomem)
		return -ENOMEM;
	if (l->n_errors)
		return -EINVAL;
	return build_index(l->cfg);
}

/* Refuses, before libyaml loads it, text too large or nested too deep
 * (base/yaml_guard.h): the message names the position. */
static int guard(struct config__loader *l, const char *text, size_t len)
{
	struct yaml_refusal why;
	int rc = yaml_guard(text, len, &why);

	if (rc == 0 || rc == -ENOMEM)
		return rc;
	if (why.line)
		config__error_at(l, (yaml_mark_t){.line = why.line - 1, .column = why.column - 1},
		                 "%s", why.msg);
	else
		config__error(l, NULL, "%s", why.msg);
	return rc;
}

int config_parse(const char *name, const char *text, size_t len, struct config **out,
                 struct config_errors *errs)
{
	struct config__loader l = {.file = name, .errs = errs, .budget = CONFIG__WALK_BUDGET};
	int rc;

	*out = NULL;
	rc = guard(&l, text, len);
	if (rc)
		goto out;
	rc = load_document(&l, text, len);
	if (rc)
		goto out;
	rc = walk(&l);
	yaml_document_delete(&l.doc);
out:
	free(l.names.v);
	free(l.namespaces.v);
	if (rc)
		config_free(&l.cfg);
	if (errs)
		config__errors_sort(errs);
	*out = l.cfg;
	return rc;
}

/* Reads at most CONFIG_MAX_FILE bytes of path into a new buffer; one byte
 * more tells that the file is too large. */
int config__read_file(const char *path, char **text, size_t *len)
{
	FILE *f = fopen(path, "rb");
	int rc = 0;

	if (!f)
		return -errno;
	*text = malloc(CONFIG_MAX_FILE + 1);
	if (!*text) {
		rc = -ENOMEM;
		goto out;
	}
	*len = fread(*text, 1, CONFIG_MAX_FILE + 1, f);
	if (ferror(f))
		rc = -EIO;
	else if (*len > CONFIG_MAX_FILE)
		rc = -EFBIG;
	if (rc) {
		free(*text);
		*text = NULL;
	}
out:
	fclose(f);
	return rc;
}

int config_load(const char *path, struct config **out, struct config_errors *errs)
{
	struct config__loader l = {.file = path, .errs = errs};
	char *text = NULL;
	size_t len = 0;
	int rc;

	*out = NULL;
	rc = config__read_file(path, &text, &len);
	if (rc == -EFBIG)
		config__error(&l, NULL, "larger than %d bytes", CONFIG_MAX_FILE);
	else if (rc)
		config__error(&l, NULL, "cannot read: %s", strerror(-rc));
	if (rc)
		return rc;
	rc = config_parse(path, text, len, out, errs);
	free(text);
	return rc;
}

/* ---- lookups ----------------------------------------------------------- */

const struct config_queue *config_find_queue(const struct config *c, const char *name)
{
	for (size_t i = 0; i < c->n_all_queues; i++)
		if (strcmp(c->all_queues[i]->name, name) == 0)
			return c->all_queues[i];
	return NULL;
}

const struct config_queue *config_queue_for_namespace(const struct config *c, const char *ns)
{
	for (size_t i = 0; i < c->n_all_queues; i++) {
		const struct config_strings *s = &c->all_queues[i]->namespaces;

		for (size_t j = 0; j < s->n; j++)
			if (strcmp(s->v[j], ns) == 0)
				return c->all_queues[i];
	}
	return c->default_queue ? config_find_queue(c, c->default_queue) : NULL;
}

/* ---- check-config ------------------------------------------------------ */

int config_check(const char *path, FILE *out, FILE *err)
{
	struct config_errors errs;
	struct config *c;
	int rc;

	config_errors_init(&errs);
	rc = config_load(path, &c, &errs);
	if (rc) {
		if (errs.n == 0 && errs.dropped == 0)
			fprintf(err, "%s: %s\n", path, strerror(-rc));
		config_errors_print(&errs, err);
		config_errors_clear(&errs);
		return 1;
	}
	fprintf(out, "%s: ok (%zu cohort%s, %zu queue%s)\n", path, c->n_all_cohorts,
	        c->n_all_cohorts == 1 ? "" : "s", c->n_all_queues, c->n_all_queues == 1 ? "" : "s");
	config_free(&c);
	return 0;
}
