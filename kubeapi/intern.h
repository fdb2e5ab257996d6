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
#ifndef MUSTER_KUBEAPI_INTERN_H
#define MUSTER_KUBEAPI_INTERN_H

#include <stddef.h>
#include <stdint.h>

struct kubeapi_intern;

/** Create an empty table. Returns 0 or -ENOMEM. */
int kubeapi_intern_new(struct kubeapi_intern **out);

/** Free the table and everything in it; clears *tp. Safe on NULL. */
void kubeapi_intern_free(struct kubeapi_intern **tp);

/** Take a reference to the string s[0..len) (no NUL needed), adding it if
 *  new. Returns its id (> 0), or 0 when out of memory. The empty string is
 *  interned like any other. Expected O(len). */
uint32_t kubeapi_str_intern(struct kubeapi_intern *t, const char *s, size_t len);

/** Take one more reference to an id returned earlier. id 0 is ignored. */
void kubeapi_str_ref(struct kubeapi_intern *t, uint32_t id);

/** Drop a reference; the string is freed with its last one. 0 is ignored. */
void kubeapi_str_unref(struct kubeapi_intern *t, uint32_t id);

/** The NUL-terminated string for id, "" for 0. Valid while referenced. */
const char *kubeapi_str(const struct kubeapi_intern *t, uint32_t id);

/** Its length in bytes (0 for id 0). */
size_t kubeapi_str_len(const struct kubeapi_intern *t, uint32_t id);

/** The id of s[0..len) if interned, else 0; takes no reference. */
uint32_t kubeapi_str_find(const struct kubeapi_intern *t, const char *s, size_t len);

/** Take a reference to a blob equal to data[0..len), copying it in if new.
 *  The returned block is 16-byte aligned and immutable; NULL when out of
 *  memory. *created (if not NULL) tells whether this call added it: a blob
 *  that holds string ids owns one reference to each, so a caller that built
 *  those references for an existing blob drops them. Expected O(len). */
const void *kubeapi_blob_intern(struct kubeapi_intern *t, const void *data, size_t len,
                                int *created);

/** References held on a blob: 1 means the next unref frees it (and the
 *  caller should first drop the string ids it holds). */
uint32_t kubeapi_blob_refs(const void *blob);

/** Its length in bytes. */
size_t kubeapi_blob_len(const void *blob);

/** One more reference to a blob returned earlier. NULL is ignored. */
void kubeapi_blob_ref(struct kubeapi_intern *t, const void *blob);

/** Drop a reference; freed with the last one. NULL is ignored. */
void kubeapi_blob_unref(struct kubeapi_intern *t, const void *blob);

/** Usage, for memory accounting and the benchmarks. */
struct kubeapi_intern_stats {
	size_t strings, string_bytes; /* live strings and their bytes incl. headers */
	size_t blobs, blob_bytes;     /* live blobs and their bytes incl. headers */
	size_t table_bytes;           /* hash tables and id maps */
};
void kubeapi_intern_stats(const struct kubeapi_intern *t, struct kubeapi_intern_stats *out);

#endif /* MUSTER_KUBEAPI_INTERN_H */
