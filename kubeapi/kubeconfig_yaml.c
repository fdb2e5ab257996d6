/*
 * The libyaml document of a kubeconfig (see kubeconfig.c): parsing it,
 * messages that name FILE:LINE:COLUMN, lookups in mappings and in the
 * named lists (contexts, clusters, users), and the values of the fields
 * that the tables in kubeconfig.c declare: strings, paths resolved against
 * the kubeconfig's directory, strict base64 data and booleans.
 *
 * Cost. The document is built whole by libyaml from at most
 * KUBEAPI_KUBECONFIG_MAX bytes, once yaml_guard.h has scanned them and
 * parsed them for events (about half the time of the load). A lookup in
 * a mapping is O(pairs), a named list is walked once per lookup,
 * O(entries), and a table of fields costs O(fields * pairs). Every scalar
 * is wiped before the document is freed.
 */
#include "kubeapi/conn.h"
#include "kubeapi/conn_internal.h"
#include "kubeapi/kubeconfig_internal.h"
#include "base/yaml_guard.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <yaml.h>

/* ---- messages ---------------------------------------------------------- */

__attribute__((format(printf, 4, 5))) int
kubeapi__yaml_fail_at(struct kubeapi__loader *l, const yaml_node_t *n, int rc, const char *fmt, ...)
{
	va_list ap;
	int used = 0;

	if (!l->err || l->errlen == 0)
		return rc;
	if (n)
		used = snprintf(l->err, l->errlen, "%s:%zu:%zu: ", l->file, n->start_mark.line + 1,
		                n->start_mark.column + 1);
	else
		used = snprintf(l->err, l->errlen, "%s: ", l->file);
	if (used < 0 || (size_t)used >= l->errlen)
		return rc;
	va_start(ap, fmt);
	kubeapi__conn_vfail(l->err + used, l->errlen - (size_t)used, rc, fmt, ap);
	va_end(ap);
	return rc;
}

/* ---- the YAML tree ----------------------------------------------------- */

static yaml_node_t *node_at(struct kubeapi__loader *l, yaml_node_item_t id)
{
	return yaml_document_get_node(&l->doc, id);
}

static bool scalar_is(const yaml_node_t *n, const char *s)
{
	size_t len = strlen(s);

	return n->type == YAML_SCALAR_NODE && n->data.scalar.length == len &&
	       memcmp(n->data.scalar.value, s, len) == 0;
}

bool kubeapi__yaml_is_unset(const yaml_node_t *n)
{
	if (!n)
		return true;
	if (n->type != YAML_SCALAR_NODE)
		return false;
	if (n->data.scalar.length == 0)
		return true;
	return n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
	       (scalar_is(n, "~") || scalar_is(n, "null") || scalar_is(n, "Null") ||
	        scalar_is(n, "NULL"));
}

/* The value under key in mapping map, or NULL. O(pairs). */
static yaml_node_t *map_get(struct kubeapi__loader *l, const yaml_node_t *map, const char *key)
{
	if (!map || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = node_at(l, p->key);

		if (k && scalar_is(k, key))
			return node_at(l, p->value);
	}
	return NULL;
}

int kubeapi__yaml_expect_type(struct kubeapi__loader *l, const yaml_node_t *n,
                              yaml_node_type_t type, const char *what)
{
	const char *name = type == YAML_SCALAR_NODE     ? "a string"
	                   : type == YAML_SEQUENCE_NODE ? "a list"
	                                                : "a mapping";

	if (n->type == type)
		return 0;
	return kubeapi__yaml_fail_at(l, n, -EINVAL, "expected %s for '%s'", name, what);
}

/* The scalar's text, NUL-terminated by libyaml and valid while the
 * document lives: at most cap bytes and no NUL inside. */
static int scalar_text(struct kubeapi__loader *l, const yaml_node_t *n, const char *what,
                       size_t cap, const char **s)
{
	int rc = kubeapi__yaml_expect_type(l, n, YAML_SCALAR_NODE, what);

	if (rc)
		return rc;
	if (n->data.scalar.length > cap)
		return kubeapi__yaml_fail_at(l, n, -EINVAL, "'%s' is longer than %zu bytes", what,
		                             cap);
	if (memchr(n->data.scalar.value, '\0', n->data.scalar.length))
		return kubeapi__yaml_fail_at(l, n, -EINVAL, "'%s' contains a NUL byte", what);
	*s = (const char *)n->data.scalar.value;
	return 0;
}

int kubeapi__yaml_optional_text(struct kubeapi__loader *l, const yaml_node_t *map, const char *key,
                                const char *prefix, const char **s)
{
	const yaml_node_t *n = map_get(l, map, key);
	char what[KUBEAPI__WHAT_LEN];

	*s = "";
	if (kubeapi__yaml_is_unset(n))
		return 0;
	snprintf(what, sizeof(what), "%s%s%s", prefix, prefix[0] ? "." : "", key);
	return scalar_text(l, n, what, KUBEAPI__NAME_CAP, s);
}

void kubeapi__yaml_wipe_document(yaml_document_t *doc)
{
	for (yaml_node_t *n = doc->nodes.start; n && n < doc->nodes.top; n++)
		if (n->type == YAML_SCALAR_NODE)
			OPENSSL_cleanse(n->data.scalar.value, n->data.scalar.length);
}

/* ---- named lists ------------------------------------------------------- */

/* Checks entry `what` ("clusters[2]") of a named list: a mapping with a
 * string name and, under inner, a mapping or nothing. */
static int check_entry(struct kubeapi__loader *l, const yaml_node_t *entry, const char *what,
                       const char *inner, const char **name, const yaml_node_t **value)
{
	char sub[2 * KUBEAPI__WHAT_LEN];
	int rc;

	rc = kubeapi__yaml_expect_type(l, entry, YAML_MAPPING_NODE, what);
	if (rc)
		return rc;
	rc = kubeapi__yaml_optional_text(l, entry, "name", what, name);
	if (rc)
		return rc;
	*value = map_get(l, entry, inner);
	if (kubeapi__yaml_is_unset(*value)) {
		*value = NULL;
		return 0;
	}
	snprintf(sub, sizeof(sub), "%s.%s", what, inner);
	return kubeapi__yaml_expect_type(l, *value, YAML_MAPPING_NODE, sub);
}

int kubeapi__yaml_find_named(struct kubeapi__loader *l, const yaml_node_t *root, const char *list,
                             const char *inner, const char *name, long *index,
                             const yaml_node_t **value)
{
	const yaml_node_t *seq = map_get(l, root, list), *v;
	char what[KUBEAPI__WHAT_LEN];
	const char *entry_name;
	long i = 0;
	int rc;

	*index = -1;
	*value = NULL;
	if (kubeapi__yaml_is_unset(seq))
		return 0;
	rc = kubeapi__yaml_expect_type(l, seq, YAML_SEQUENCE_NODE, list);
	for (yaml_node_item_t *it = seq->data.sequence.items.start;
	     rc == 0 && it < seq->data.sequence.items.top; it++, i++) {
		const yaml_node_t *entry = node_at(l, *it);

		snprintf(what, sizeof(what), "%s[%ld]", list, i);
		rc = check_entry(l, entry, what, inner, &entry_name, &v);
		if (rc || strcmp(entry_name, name) != 0)
			continue;
		if (*index >= 0)
			return kubeapi__yaml_fail_at(l, entry, -EINVAL,
			                             "%s name '%s' appears twice", list, name);
		*index = i;
		*value = v;
	}
	return rc;
}

/* ---- field values ------------------------------------------------------ */

static int field_string(struct kubeapi__loader *l, const yaml_node_t *n, const char *what,
                        const struct kubeapi__field *f, char **out)
{
	const char *s;
	int rc = scalar_text(l, n, what, f->cap, &s);

	if (rc)
		return rc;
	if (kubeapi__conn_has_control_char(s, n->data.scalar.length))
		return kubeapi__yaml_fail_at(l, n, -EINVAL, "'%s' contains a control character",
		                             what);
	*out = strdup(s);
	return *out ? 0 : -ENOMEM;
}

static int field_path(struct kubeapi__loader *l, const yaml_node_t *n, const char *what,
                      const struct kubeapi__field *f, char **out)
{
	char *p = NULL;
	int rc = field_string(l, n, what, f, &p);

	if (rc || p[0] == '/') {
		*out = p;
		return rc;
	}
	rc = kubeapi__conn_join_path(l->dir, p, out);
	free(p);
	if (rc == -ENAMETOOLONG)
		return kubeapi__yaml_fail_at(
		    l, n, -EINVAL, "'%s' is too long once resolved against %s", what, l->dir);
	return rc;
}

static int b64_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' || c == '/' ? 0 : -1;
}

/* Copies s without whitespace into compact (len + 1 bytes) and checks that
 * it is standard, padded base64. Returns its length and the padding count,
 * or -1 with *bad set to the offset in s of the first offending byte. */
static long b64_compact(const char *s, size_t len, char *compact, size_t *pad, size_t *bad)
{
	size_t n = 0;

	*pad = 0;
	for (size_t i = 0; i < len; i++) {
		if (kubeapi__conn_is_space(s[i]))
			continue;
		*bad = i;
		if (s[i] == '=' && *pad < 2)
			(*pad)++;
		else if (*pad > 0 || b64_value(s[i]) < 0)
			return -1;
		compact[n++] = s[i];
	}
	*bad = len;
	return n % 4 == 0 ? (long)n : -1;
}

/* Decodes a -data field into a new blob (NUL-terminated past len). Strict:
 * the standard alphabet, '=' padding to a multiple of 4, whitespace and
 * line breaks ignored; anything else is -EINVAL. */
static int field_data(struct kubeapi__loader *l, const yaml_node_t *n, const char *what,
                      const struct kubeapi__field *f, struct kubeapi_blob *out)
{
	size_t pad, bad, len;
	char *compact, *bytes = NULL;
	const char *s;
	long clen;
	int rc, got;

	rc = scalar_text(l, n, what, f->cap, &s);
	if (rc)
		return rc;
	len = n->data.scalar.length;
	compact = malloc(len + 1);
	if (!compact)
		return -ENOMEM;
	clen = b64_compact(s, len, compact, &pad, &bad);
	if (clen < 0 && bad < len)
		rc = kubeapi__yaml_fail_at(l, n, -EINVAL,
		                           "'%s' is not valid base64 (byte %zu of the value)", what,
		                           bad + 1);
	else if (clen < 0)
		rc = kubeapi__yaml_fail_at(
		    l, n, -EINVAL, "'%s' is not valid base64 (length not a multiple of 4)", what);
	if (clen <= 0) /* an error, or only whitespace: unset */
		goto out;
	bytes = malloc((size_t)clen / 4 * 3 + 1);
	if (!bytes) {
		rc = -ENOMEM;
		goto out;
	}
	/* EVP_DecodeBlock decodes '=' as zero bits; the padding count says how
	 * many of its output bytes are not data. */
	got = EVP_DecodeBlock((unsigned char *)bytes, (unsigned char *)compact, (int)clen);
	if (got < 0 || (size_t)got < pad) {
		rc = kubeapi__yaml_fail_at(l, n, -EINVAL, "'%s' is not valid base64", what);
		goto out;
	}
	out->len = (size_t)got - pad;
	bytes[out->len] = '\0';
	out->data = bytes;
	bytes = NULL;
out:
	kubeapi__conn_free_secret(&bytes, clen > 0 ? (size_t)clen / 4 * 3 : 0);
	kubeapi__conn_free_secret(&compact, len);
	return rc;
}

/* Only the YAML 1.2 core booleans; "yes", "on", "1" or a quoted "true" are
 * errors rather than a guess. */
static int field_bool(struct kubeapi__loader *l, const yaml_node_t *n, const char *what, int *out)
{
	static const char *const truths[] = {"true", "True", "TRUE"};
	static const char *const lies[] = {"false", "False", "FALSE"};
	int rc = kubeapi__yaml_expect_type(l, n, YAML_SCALAR_NODE, what);

	if (rc)
		return rc;
	for (size_t i = 0; n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && i < 3; i++) {
		if (scalar_is(n, truths[i]) || scalar_is(n, lies[i])) {
			*out = scalar_is(n, truths[i]);
			return 0;
		}
	}
	return kubeapi__yaml_fail_at(l, n, -EINVAL, "expected true or false for '%s'", what);
}

static int apply_field(struct kubeapi__loader *l, const yaml_node_t *n, const char *what,
                       const struct kubeapi__field *f, struct kubeapi_conn *c)
{
	void *dst = (char *)c + f->off;

	switch (f->kind) {
	case KUBEAPI__FIELD_STRING:
		return field_string(l, n, what, f, dst);
	case KUBEAPI__FIELD_PATH:
		return field_path(l, n, what, f, dst);
	case KUBEAPI__FIELD_DATA:
		return field_data(l, n, what, f, dst);
	case KUBEAPI__FIELD_BOOL:
		return field_bool(l, n, what, dst);
	case KUBEAPI__FIELD_UNSUPPORTED:
		break;
	}
	return kubeapi__yaml_fail_at(l, n, -ENOTSUP, "'%s': %s", what, f->why);
}

int kubeapi__yaml_apply_fields(struct kubeapi__loader *l, const yaml_node_t *map,
                               const char *prefix, const struct kubeapi__field *table, size_t count,
                               struct kubeapi_conn *c)
{
	char what[KUBEAPI__WHAT_LEN];
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < count; i++) {
		const yaml_node_t *n = map_get(l, map, table[i].key);

		if (kubeapi__yaml_is_unset(n))
			continue;
		snprintf(what, sizeof(what), "%s.%s", prefix, table[i].key);
		rc = apply_field(l, n, what, &table[i], c);
	}
	return rc;
}

/* ---- parsing ----------------------------------------------------------- */

/* Refuses, before libyaml loads it, text too large or nested too deep
 * (yaml_guard.h), with the position as a syntax error has it. */
static int guard(struct kubeapi__loader *l, const char *text, size_t len)
{
	struct yaml_refusal why;
	int rc = yaml_guard(text, len, &why);

	if (rc == 0)
		return 0;
	if (rc == -ENOMEM)
		return kubeapi__yaml_fail_at(l, NULL, rc, "out of memory parsing YAML");
	if (why.line)
		return kubeapi__conn_fail(l->err, l->errlen, rc, "%s:%zu:%zu: %s", l->file,
		                          why.line, why.column, why.msg);
	return kubeapi__yaml_fail_at(l, NULL, rc, "%s", why.msg);
}

int kubeapi__yaml_parse(struct kubeapi__loader *l, const char *text, size_t len)
{
	yaml_parser_t parser;
	int rc = guard(l, text, len);

	if (rc)
		return rc;
	if (!yaml_parser_initialize(&parser))
		return -ENOMEM;
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (yaml_parser_load(&parser, &l->doc))
		goto out;
	if (parser.error == YAML_MEMORY_ERROR)
		rc = kubeapi__yaml_fail_at(l, NULL, -ENOMEM, "out of memory parsing YAML");
	else if (parser.error == YAML_READER_ERROR)
		rc = kubeapi__yaml_fail_at(l, NULL, -EINVAL, "byte %zu: %s",
		                           parser.problem_offset + 1,
		                           parser.problem ? parser.problem : "unreadable input");
	else if (parser.context)
		rc = kubeapi__conn_fail(
		    l->err, l->errlen, -EINVAL, "%s:%zu:%zu: %s (%s at %zu:%zu)", l->file,
		    parser.problem_mark.line + 1, parser.problem_mark.column + 1,
		    parser.problem ? parser.problem : "invalid YAML", parser.context,
		    parser.context_mark.line + 1, parser.context_mark.column + 1);
	else
		rc =
		    kubeapi__conn_fail(l->err, l->errlen, -EINVAL, "%s:%zu:%zu: %s", l->file,
		                       parser.problem_mark.line + 1, parser.problem_mark.column + 1,
		                       parser.problem ? parser.problem : "invalid YAML");
out:
	yaml_parser_delete(&parser);
	return rc;
}
