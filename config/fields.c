/*
 * The table-driven walk of a mapping (see struct config__field) and the
 * scalar kinds: strings, lists of strings, bounded integers, durations,
 * booleans and enums; and the duration parser, public for annotations.
 *
 * Cost. A walk checks each key of the mapping against the table and looks
 * each field of the table up in the mapping: O(pairs * fields) per
 * mapping, with both small. Every mapping walked spends one unit of
 * l->budget, which bounds the work a document full of aliases can cause.
 */
#include "config/config.h"
#include "config/config_internal.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

yaml_node_t *config__node(struct config__loader *l, yaml_node_item_t id)
{
	return yaml_document_get_node(&l->doc, id);
}

static bool scalar_is(const yaml_node_t *n, const char *s)
{
	return n->type == YAML_SCALAR_NODE && n->data.scalar.length == strlen(s) &&
	       memcmp(n->data.scalar.value, s, n->data.scalar.length) == 0;
}

/* A plain "~", "null" or nothing at all: the key is treated as absent. */
bool config__is_null(const yaml_node_t *n)
{
	if (!n)
		return true;
	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	return n->data.scalar.length == 0 || scalar_is(n, "~") || scalar_is(n, "null") ||
	       scalar_is(n, "Null") || scalar_is(n, "NULL");
}

const char *config__type_name(const yaml_node_t *n)
{
	return n->type == YAML_MAPPING_NODE    ? "a mapping"
	       : n->type == YAML_SEQUENCE_NODE ? "a list"
	                                       : "a string";
}

bool config__expect(struct config__loader *l, const yaml_node_t *n, yaml_node_type_t type,
                    const char *what)
{
	const yaml_node_t want = {.type = type};

	if (n->type == type)
		return true;
	config__error(l, n, "expected %s for '%s', got %s", config__type_name(&want), what,
	              config__type_name(n));
	return false;
}

void *config__calloc(struct config__loader *l, size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (!p)
		l->nomem = true;
	return p;
}

char *config__string(struct config__loader *l, const yaml_node_t *n, const char *what)
{
	size_t len;
	char *s;

	if (!config__expect(l, n, YAML_SCALAR_NODE, what))
		return NULL;
	len = n->data.scalar.length;
	if (len == 0) {
		config__error(l, n, "'%s' must not be empty", what);
		return NULL;
	}
	if (len > CONFIG_MAX_STRING || memchr(n->data.scalar.value, '\0', len)) {
		config__error(l, n, "'%s' must be at most %d bytes with no NUL byte", what,
		              CONFIG_MAX_STRING);
		return NULL;
	}
	s = config__calloc(l, len + 1, 1);
	if (s)
		memcpy(s, n->data.scalar.value, len);
	return s;
}

/* ---- scalar kinds ------------------------------------------------------ */

static void *at(void *obj, size_t offset)
{
	return (char *)obj + offset;
}

static void set_string(struct config__loader *l, const yaml_node_t *n,
                       const struct config__field *f, void *obj)
{
	char **dst = at(obj, f->offset);
	char *s = config__string(l, n, f->key);

	if (!s)
		return;
	free(*dst);
	*dst = s;
}

bool config__strings(struct config__loader *l, const yaml_node_t *n, const char *what,
                     struct config_strings *dst)
{
	size_t count;

	if (!config__expect(l, n, YAML_SEQUENCE_NODE, what))
		return false;
	count = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	dst->v = config__calloc(l, count, sizeof(char *));
	for (size_t i = 0; dst->v && i < count; i++) {
		char *s = config__string(l, config__node(l, n->data.sequence.items.start[i]), what);

		if (s)
			dst->v[dst->n++] = s;
	}
	return true;
}

static void set_strings(struct config__loader *l, const yaml_node_t *n,
                        const struct config__field *f, void *obj)
{
	config__strings(l, n, f->key, at(obj, f->offset));
}

/* Plain decimal digits with an optional '-', no more than fits int64. */
static int parse_int(const yaml_node_t *n, int64_t *out)
{
	const char *s = (const char *)n->data.scalar.value;
	char *end;
	long long v;

	if (n->data.scalar.length == 0 || n->data.scalar.length > 20 ||
	    !(s[0] == '-' || (s[0] >= '0' && s[0] <= '9')))
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || (size_t)(end - s) != n->data.scalar.length)
		return -EINVAL;
	*out = v;
	return 0;
}

static void set_int(struct config__loader *l, const yaml_node_t *n, const struct config__field *f,
                    void *obj)
{
	int64_t v;

	if (!config__expect(l, n, YAML_SCALAR_NODE, f->key))
		return;
	if (parse_int(n, &v) || v < f->min || v > f->max) {
		config__error(l, n, "expected an integer from %lld to %lld for '%s', got '%s'",
		              (long long)f->min, (long long)f->max, f->key, n->data.scalar.value);
		return;
	}
	*(int64_t *)at(obj, f->offset) = v;
}

static void set_duration(struct config__loader *l, const yaml_node_t *n,
                         const struct config__field *f, void *obj)
{
	int64_t ms;

	if (!config__expect(l, n, YAML_SCALAR_NODE, f->key))
		return;
	if (units_duration_ms((const char *)n->data.scalar.value, n->data.scalar.length, &ms)) {
		config__error(
		    l, n, "expected a duration such as 90s, 10m, 1h30m or 500ms for '%s', got '%s'",
		    f->key, n->data.scalar.value);
		return;
	}
	*(int64_t *)at(obj, f->offset) = ms;
}

/* YAML 1.2's core schema: what Kubernetes' own YAML reads as a boolean.
 * YAML 1.1's yes/no/on/off are refused, as they surprise more than help. */
static void set_bool(struct config__loader *l, const yaml_node_t *n, const struct config__field *f,
                     void *obj)
{
	static const char *const names[] = {"true", "True", "TRUE", "false", "False", "FALSE"};

	if (!config__expect(l, n, YAML_SCALAR_NODE, f->key))
		return;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (scalar_is(n, names[i])) {
			*(bool *)at(obj, f->offset) = i < 3;
			return;
		}
	}
	config__error(l, n, "expected true or false for '%s', got '%s'", f->key,
	              n->data.scalar.value);
}

/* "A, B or C" into buf, for messages. */
static void list_names(const char *const *names, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; names[i] && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s",
		                         i == 0         ? ""
		                         : names[i + 1] ? ", "
		                                        : " or ",
		                         names[i]);
}

static void set_enum(struct config__loader *l, const yaml_node_t *n, const struct config__field *f,
                     void *obj)
{
	char allowed[256];

	if (!config__expect(l, n, YAML_SCALAR_NODE, f->key))
		return;
	for (int i = 0; f->names[i]; i++) {
		if (scalar_is(n, f->names[i])) {
			*(int *)at(obj, f->offset) = i;
			return;
		}
	}
	list_names(f->names, allowed, sizeof(allowed));
	config__error(l, n, "unknown %s '%s'; expected %s", f->key, n->data.scalar.value, allowed);
}

static void apply(struct config__loader *l, const yaml_node_t *n, const struct config__field *f,
                  void *obj)
{
	switch (f->kind) {
	case CONFIG__STRING:
		set_string(l, n, f, obj);
		break;
	case CONFIG__STRINGS:
		set_strings(l, n, f, obj);
		break;
	case CONFIG__INT:
		set_int(l, n, f, obj);
		break;
	case CONFIG__DURATION:
		set_duration(l, n, f, obj);
		break;
	case CONFIG__BOOL:
		set_bool(l, n, f, obj);
		break;
	case CONFIG__ENUM:
		set_enum(l, n, f, obj);
		break;
	case CONFIG__MAP:
		config__walk(l, n, f->sub, obj);
		break;
	case CONFIG__CUSTOM:
		f->fn(l, n, obj);
		break;
	}
}

/* ---- mappings ---------------------------------------------------------- */

static const struct config__field *field_for(const struct config__table *t, const yaml_node_t *k)
{
	for (size_t i = 0; i < t->n; i++)
		if (scalar_is(k, t->fields[i].key))
			return &t->fields[i];
	return NULL;
}

static void unknown_key(struct config__loader *l, const yaml_node_t *k,
                        const struct config__table *t)
{
	const char *names[32];
	char allowed[512];
	size_t i;

	for (i = 0; i < t->n && i < 31; i++)
		names[i] = t->fields[i].key;
	names[i] = NULL;
	list_names(names, allowed, sizeof(allowed));
	if (k->type == YAML_SCALAR_NODE)
		config__error(l, k, "unknown key '%s' in %s; expected %s", k->data.scalar.value,
		              t->what, allowed);
	else
		config__error(l, k, "expected a string key in %s, got %s", t->what,
		              config__type_name(k));
}

/* Checks every key of n: known, and not given twice. */
static void check_keys(struct config__loader *l, const yaml_node_t *n,
                       const struct config__table *t)
{
	const yaml_node_pair_t *start = n->data.mapping.pairs.start;

	for (const yaml_node_pair_t *p = start; p < n->data.mapping.pairs.top; p++) {
		const yaml_node_t *k = config__node(l, p->key);

		if (!field_for(t, k)) {
			unknown_key(l, k, t);
			continue;
		}
		for (const yaml_node_pair_t *q = start; q < p; q++)
			if (scalar_is(config__node(l, q->key), (const char *)k->data.scalar.value))
				config__error(l, k, "key '%s' appears twice in %s",
				              k->data.scalar.value, t->what);
	}
}

static const yaml_node_t *lookup(struct config__loader *l, const yaml_node_t *n, const char *key)
{
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++)
		if (scalar_is(config__node(l, p->key), key))
			return config__node(l, p->value);
	return NULL;
}

void config__walk(struct config__loader *l, const yaml_node_t *n, const struct config__table *t,
                  void *obj)
{
	if (l->budget == 0 || l->nomem)
		return;
	if (--l->budget == 0) {
		config__error(l, n, "too many mappings (more than %d, counting aliases)",
		              CONFIG__WALK_BUDGET);
		return;
	}
	if (!config__expect(l, n, YAML_MAPPING_NODE, t->what))
		return;
	check_keys(l, n, t);
	for (size_t i = 0; i < t->n; i++) {
		const struct config__field *f = &t->fields[i];
		const yaml_node_t *v = lookup(l, n, f->key);

		if (!config__is_null(v))
			apply(l, v, f, obj);
		else if (f->required)
			config__error(l, n, "missing '%s' in %s", f->key, t->what);
	}
}
