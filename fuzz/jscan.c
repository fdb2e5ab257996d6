/*
 * Fuzz target: the JSON skimmer (kubeapi/jscan.c) that cuts list pages
 * into items and measures watch events before cJSON sees them.
 *
 * The input is any text. What kubeapi/jscan.h promises is checked against
 * cJSON, which parses fully:
 * - every span the iterator hands out lies inside the text, and the
 *   iterator ends (1 per element, then 0 or an error) within len steps;
 * - when cJSON accepts the whole text as an array or object (and it has
 *   no control bytes, which cJSON takes for blanks), the skimmer
 *   walks it to the end without an error, finds as many elements, and
 *   each element's span is one value that cJSON parses to an equal item;
 * - kubeapi__jfind and kubeapi__jstring stay inside the text and out[].
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "fuzz/fuzz.h"
#include "kubeapi/jscan.h"

/* cJSON skips any byte <= 32 as blank, NUL and other controls too, where
 * JSON allows only four: a text with others is no promise. */
static int strict_bytes(const char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)p[i] < 0x20 && p[i] != '\t' && p[i] != '\n' && p[i] != '\r')
			return 0;
	return 1;
}

static int blank(const char *p, const char *end)
{
	for (; p < end; p++)
		if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n')
			return 0;
	return 1;
}

static int inside(struct kubeapi__span s, size_t len)
{
	return s.off <= len && s.len <= len - s.off;
}

/* The span parses by itself to an item equal to want. */
static void same_value(const char *p, struct kubeapi__span v, const cJSON *want)
{
	cJSON *got = cJSON_ParseWithLength(p + v.off, v.len);
	char *a, *b;

	FUZZ_CHECK(got != NULL);
	/* Printed, not cJSON_Compare(): that looks keys up by name, so an
	 * object with a key twice never equals itself. */
	a = cJSON_PrintUnformatted(got);
	b = cJSON_PrintUnformatted(want);
	FUZZ_CHECK(a && b && strcmp(a, b) == 0);
	cJSON_free(a);
	cJSON_free(b);
	cJSON_Delete(got);
}

static void walk(const char *p, size_t len, const cJSON *whole)
{
	struct kubeapi__jiter it;
	struct kubeapi__span key, val;
	const cJSON *elem = whole ? whole->child : NULL;
	size_t steps = 0;
	int rc;

	if (kubeapi__jiter_init(&it, p, len, 0) < 0) {
		FUZZ_CHECK(!whole);
		return;
	}
	while ((rc = kubeapi__jiter_next(&it, &key, &val)) == 1) {
		FUZZ_CHECK(++steps <= len);
		FUZZ_CHECK(inside(val, len));
		if (it.close == '}')
			FUZZ_CHECK(inside(key, len));
		if (whole) {
			FUZZ_CHECK(elem != NULL);
			same_value(p, val, elem);
			elem = elem->next;
		}
	}
	FUZZ_CHECK(rc == 0 || rc == -EINVAL || rc == -EAGAIN);
	FUZZ_CHECK(rc != -EAGAIN || inside(val, len));
	if (whole) {
		FUZZ_CHECK(rc == 0);
		FUZZ_CHECK(elem == NULL);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data;
	const char *end = NULL;
	cJSON *whole = cJSON_ParseWithLengthOpts(p, size, &end, 0);
	struct kubeapi__span val;
	char out[64];
	int rc;

	/* Only a container that is the whole text (blanks after it allowed)
	 * is a promise the skimmer must keep. */
	if (whole && (!(cJSON_IsArray(whole) || cJSON_IsObject(whole)) || !blank(end, p + size) ||
	              !strict_bytes(p, size))) {
		cJSON_Delete(whole);
		whole = NULL;
	}
	walk(p, size, whole);
	rc = kubeapi__jfind(p, size, 0, "metadata", &val);
	FUZZ_CHECK(rc == 1 || rc == 0 || rc == -EINVAL || rc == -EAGAIN);
	if (rc == 1 || rc == -EAGAIN) {
		FUZZ_CHECK(inside(val, size));
		if (rc == 1) {
			rc = kubeapi__jstring(p, val, out, sizeof(out));
			FUZZ_CHECK(rc == 0 || (rc == -EINVAL && out[0] == '\0'));
			FUZZ_CHECK(memchr(out, '\0', sizeof(out)) != NULL);
		}
	}
	cJSON_Delete(whole);
	return 0;
}
