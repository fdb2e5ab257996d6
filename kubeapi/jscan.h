/*
 * A skimmer for JSON text: where a value begins and ends, without building
 * anything. The informer uses it to cut a List page into its items, and to
 * measure an item or a watch event, before any of it is parsed, and to read
 * the head of a text that was cut short (a page over the body cap).
 *
 * It checks only what it needs to find the end of a value: strings end,
 * brackets balance, members are separated. What it hands on is parsed by
 * cJSON, which checks the rest. Text may end early: every call says so
 * (-EAGAIN) instead of reading past the bytes it was given.
 *
 * Cost: one pass over the bytes skipped, strings by memchr(); no
 * allocation; nesting is a counter, not recursion, so deep nesting costs
 * nothing more than its bytes.
 *
 * Internal to kubeapi/.
 */
#ifndef MUSTER_KUBEAPI_JSCAN_H
#define MUSTER_KUBEAPI_JSCAN_H

#include <stdbool.h>
#include <stddef.h>

/* Bytes p[off .. off+len) of some text. */
struct kubeapi__span {
	size_t off, len;
};

/* The members of an object, or the elements of an array, in order. */
struct kubeapi__jiter {
	const char *p;
	size_t len; /* bytes available */
	size_t pos; /* next byte to read */
	char close; /* '}' or ']' */
	bool first;
};

/** Start at the '{' or '[' at p[off] (whitespace before it is skipped).
 *  0, -EINVAL (something else there), -EAGAIN (the text ends first). */
int kubeapi__jiter_init(struct kubeapi__jiter *it, const char *p, size_t len, size_t off);

/** The next member: *key (objects only: the raw bytes between the quotes;
 *  may be NULL for arrays) and *val, the whole value. Returns 1, 0 when the
 *  container has ended, -EINVAL (malformed), -EAGAIN (the text ends
 *  first): then val->len is what there is of a value that had begun, or 0
 *  and val->off the end of the text. */
int kubeapi__jiter_next(struct kubeapi__jiter *it, struct kubeapi__span *key,
                        struct kubeapi__span *val);

/** Find member `name` of the object at p[off]. 1 and *val; 0 absent;
 *  -EAGAIN: the text ends first, *val as for kubeapi__jiter_next (a value
 *  that had begun is `name`'s only when val->len > 0); -EINVAL. */
int kubeapi__jfind(const char *p, size_t len, size_t off, const char *name,
                   struct kubeapi__span *val);

/** Copy the string value at `val` into out[cap] when it is a complete
 *  string with no escapes or control bytes and fits with its NUL. 0 or
 *  -EINVAL (then out is ""). */
int kubeapi__jstring(const char *p, struct kubeapi__span val, char *out, size_t cap);

#endif /* MUSTER_KUBEAPI_JSCAN_H */
