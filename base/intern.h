/*
 * Interning: the cluster cache stores each distinct string and each
 * distinct scheduling spec once, however many objects share it.
 *
 * Why: 50,000 pods of a few hundred Jobs repeat the same namespaces, node
 * names, label values, tolerations and affinity. Held once and referenced by
 * a 4-byte id or a pointer, a cached pod costs a few hundred bytes instead
 * of the tens of kilobytes a decoded Go object holds.
 *
 * Strings get a uint32 id (0 means "none"); blobs are immutable,
 * position-independent byte blocks (no pointers inside, padding zeroed)
 * compared by their bytes. Both are reference counted: an object takes one
 * reference per use and drops it when it goes away, and the entry is freed
 * with its last reference. Not thread-safe: the cache lives on the loop.
 */
#ifndef MUSTER_BASE_INTERN_H
#define MUSTER_BASE_INTERN_H

#include <stddef.h>
#include <stdint.h>

struct intern;

/** Create an empty table. Returns 0 or -ENOMEM. */
int intern_new(struct intern **out);

/** Free the table and everything in it; clears *tp. Safe on NULL. */
void intern_free(struct intern **tp);

/** Take a reference to the string s[0..len) (no NUL needed), adding it if
 *  new. Returns its id (> 0), or 0 when out of memory. The empty string is
 *  interned like any other. Expected O(len). */
uint32_t intern_add(struct intern *t, const char *s, size_t len);

/** Take one more reference to an id returned earlier. id 0 is ignored. */
void intern_ref(struct intern *t, uint32_t id);

/** Drop a reference; the string is freed with its last one. 0 is ignored. */
void intern_unref(struct intern *t, uint32_t id);

/** The NUL-terminated string for id, "" for 0. Valid while referenced. */
const char *intern_str(const struct intern *t, uint32_t id);

/** Its length in bytes (0 for id 0). */
size_t intern_len(const struct intern *t, uint32_t id);

/** The id of s[0..len) if interned, else 0; takes no reference. */
uint32_t intern_find(const struct intern *t, const char *s, size_t len);

/** Take a reference to a blob equal to data[0..len), copying it in if new.
 *  The returned block is 16-byte aligned and immutable; NULL when out of
 *  memory. *created (if not NULL) tells whether this call added it: a blob
 *  that holds string ids owns one reference to each, so a caller that built
 *  those references for an existing blob drops them. Expected O(len). */
const void *intern_blob(struct intern *t, const void *data, size_t len, int *created);

/** References held on a blob: 1 means the next unref frees it (and the
 *  caller should first drop the string ids it holds). */
uint32_t intern_blob_refs(const void *blob);

/** Its length in bytes. */
size_t intern_blob_len(const void *blob);

/** One more reference to a blob returned earlier. NULL is ignored. */
void intern_blob_ref(struct intern *t, const void *blob);

/** Drop a reference; freed with the last one. NULL is ignored. */
void intern_blob_unref(struct intern *t, const void *blob);

/** Usage, for memory accounting and the benchmarks. */
struct intern_stats {
	size_t strings, string_bytes; /* live strings and their bytes incl. headers */
	size_t blobs, blob_bytes;     /* live blobs and their bytes incl. headers */
	size_t table_bytes;           /* hash tables and id maps */
};
void intern_stats(const struct intern *t, struct intern_stats *out);

#endif /* MUSTER_BASE_INTERN_H */
