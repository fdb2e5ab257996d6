/*
 * The error list of a load: at most CONFIG_MAX_ERRORS messages are kept,
 * the rest counted, so a hostile file cannot make the list grow without
 * bound. Each message costs one allocation of its own length.
 */
#include "config/config.h"
#include "config/config_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void config_errors_init(struct config_errors *errs)
{
	memset(errs, 0, sizeof(*errs));
}

void config_errors_clear(struct config_errors *errs)
{
	for (size_t i = 0; i < errs->n; i++)
		free(errs->v[i].msg);
	config_errors_init(errs);
}

void config_errors_print(const struct config_errors *errs, FILE *out)
{
	for (size_t i = 0; i < errs->n; i++)
		fprintf(out, "%s\n", errs->v[i].msg);
	if (errs->dropped)
		fprintf(out, "%zu more error%s\n", errs->dropped, errs->dropped == 1 ? "" : "s");
}

/* Appends "PREFIX: message" at (line, column); a message that cannot be
 * allocated is counted as dropped rather than failing the load. */
__attribute__((format(printf, 4, 0))) static void record(struct config__loader *l, size_t line,
                                                         size_t column, const char *fmt, va_list ap)
{
	struct config_errors *e = l->errs;
	char body[1024];
	char *msg;

	l->n_errors++;
	if (!e)
		return;
	if (e->n == CONFIG_MAX_ERRORS) {
		e->dropped++;
		return;
	}
	vsnprintf(body, sizeof(body), fmt, ap);
	if (line)
		msg = malloc(strlen(l->file) + strlen(body) + 48);
	else
		msg = malloc(strlen(l->file) + strlen(body) + 3);
	if (!msg) {
		e->dropped++;
		return;
	}
	if (line)
		sprintf(msg, "%s:%zu:%zu: %s", l->file, line, column, body);
	else
		sprintf(msg, "%s: %s", l->file, body);
	e->v[e->n++] = (struct config_error){msg, line, column};
}

void config__error(struct config__loader *l, const yaml_node_t *n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (n)
		record(l, n->start_mark.line + 1, n->start_mark.column + 1, fmt, ap);
	else
		record(l, 0, 0, fmt, ap);
	va_end(ap);
}

void config__error_at(struct config__loader *l, yaml_mark_t mark, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	record(l, mark.line + 1, mark.column + 1, fmt, ap);
	va_end(ap);
}

static int before(const struct config_error *a, const struct config_error *b)
{
	return a->line < b->line || (a->line == b->line && a->column < b->column);
}

/* Insertion sort: stable, so errors at one node keep the order they were
 * found in, and at most CONFIG_MAX_ERRORS^2 / 2 steps. */
void config__errors_sort(struct config_errors *errs)
{
	for (size_t i = 1; i < errs->n; i++) {
		struct config_error e = errs->v[i];
		size_t j = i;

		for (; j > 0 && before(&e, &errs->v[j - 1]); j--)
			errs->v[j] = errs->v[j - 1];
		errs->v[j] = e;
	}
}
