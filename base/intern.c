/*
 * Interned strings and blobs: two open-addressing hash sets with linear
 * probing, tombstones on removal, and a per-table random seed so label
 * values chosen by a hostile user cannot force collisions we did not pick.
 *
 * Strings: an id is an index into `strs`, a vector of pointers to
 * { refs, len, hash, bytes }; freed ids are reused (a stack). Cost per
 * distinct string: 12 bytes of header + len + 1, a vector slot (8) and
 * about 6 bytes of index at the 0.7 load bound.
 * Blobs: { refs, len, hash } then the bytes, 16-byte aligned, found by a
 * hash set of header pointers. Cost per distinct blob: 16 + len bytes and
 * about 11 bytes of index.
 */
#include "base/intern.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define TOMBSTONE UINT32_MAX
#define MIN_SLOTS 64

struct istr {
	uint32_t refs, len, hash;
	char s[];
};

struct iblob {
	uint32_t refs, len;
	uint64_t hash;
	/* 16 bytes: the data that follows is 16-byte aligned (malloc is). */
};

struct intern {
	uint64_t seed;
	/* strings */
	struct istr **strs; /* by id; [0] unused */
	uint32_t nstrs, capstrs;
	uint32_t *free_ids;
	uint32_t nfree, capfree;
	uint32_t *sidx; /* hash set of ids: 0 empty, TOMBSTONE removed */
	uint32_t sslots, sused, stomb;
	size_t string_bytes, live_strings;
	/* blobs */
	struct iblob **bidx; /* hash set: NULL empty, BLOB_TOMBSTONE removed */
	uint32_t bslots, bused, btomb;
	size_t blob_bytes, live_blobs;
};

/* Marks a removed slot in the blob index; never dereferenced. */
#define BLOB_TOMBSTONE ((struct iblob *)(uintptr_t)1)

/* FNV-1a over the bytes, seeded, with a final avalanche so the low bits
 * used for the slot index depend on every byte. */
static uint64_t hash_bytes(uint64_t seed, const void *p, size_t len)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ULL ^ seed;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h;
}

int intern_new(struct intern **out)
{
	struct intern *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	if (getrandom(&t->seed, sizeof(t->seed), GRND_NONBLOCK) != sizeof(t->seed))
		t->seed = (uint64_t)(uintptr_t)t * 0x9e3779b97f4a7c15ULL;
	t->nstrs = 1; /* id 0 is "none" */
	*out = t;
	return 0;
}

void intern_free(struct intern **tp)
{
	struct intern *t = tp ? *tp : NULL;
	uint32_t i;

	if (!t)
		return;
	for (i = 1; i < t->nstrs; i++)
		free(t->strs[i]);
	for (i = 0; i < t->bslots; i++)
		if (t->bidx[i] && t->bidx[i] != BLOB_TOMBSTONE)
			free(t->bidx[i]);
	free(t->strs);
	free(t->free_ids);
	free(t->sidx);
	free(t->bidx);
	free(t);
	*tp = NULL;
}

/* ---- strings ------------------------------------------------------------ */

static bool str_eq(const struct istr *e, uint32_t hash, const char *s, size_t len)
{
	return e->hash == hash && e->len == len && memcmp(e->s, s, len) == 0;
}

/* Slot holding s, or the slot where it would go (first tombstone or empty). */
static uint32_t str_slot(const struct intern *t, uint32_t hash, const char *s, size_t len,
                         bool *found)
{
	uint32_t mask = t->sslots - 1, i = hash & mask, insert = UINT32_MAX;

	for (;; i = (i + 1) & mask) {
		uint32_t id = t->sidx[i];

		if (id == 0) {
			*found = false;
			return insert != UINT32_MAX ? insert : i;
		}
		if (id == TOMBSTONE) {
			if (insert == UINT32_MAX)
				insert = i;
		} else if (str_eq(t->strs[id], hash, s, len)) {
			*found = true;
			return i;
		}
	}
}

/* Rebuild the index with `slots` slots, dropping tombstones. */
static int str_rehash(struct intern *t, uint32_t slots)
{
	uint32_t *idx = calloc(slots, sizeof(*idx)), i;

	if (!idx)
		return -ENOMEM;
	for (i = 1; i < t->nstrs; i++) {
		uint32_t j;

		if (!t->strs[i])
			continue;
		for (j = t->strs[i]->hash & (slots - 1); idx[j]; j = (j + 1) & (slots - 1))
			;
		idx[j] = i;
	}
	free(t->sidx);
	t->sidx = idx;
	t->sslots = slots;
	t->stomb = 0;
	return 0;
}

static int str_reserve(struct intern *t)
{
	if (t->sslots == 0)
		return str_rehash(t, MIN_SLOTS);
	if ((uint64_t)(t->sused + t->stomb + 1) * 10 > (uint64_t)t->sslots * 7)
		return str_rehash(t,
		                  (t->sused + 1) * 10 > t->sslots * 3 ? t->sslots * 2 : t->sslots);
	return 0;
}

/* An id for a new string: a freed one, or the next in the vector. */
static uint32_t str_new_id(struct intern *t)
{
	if (t->nfree)
		return t->free_ids[--t->nfree];
	if (t->nstrs >= t->capstrs) {
		uint32_t cap = t->capstrs ? t->capstrs * 2 : 256;
		struct istr **v;

		if (t->capstrs >= TOMBSTONE / 2) /* ids would reach TOMBSTONE */
			return 0;
		v = realloc(t->strs, cap * sizeof(*v));
		if (!v)
			return 0;
		t->strs = v;
		t->capstrs = cap;
	}
	return t->nstrs++;
}

uint32_t intern_add(struct intern *t, const char *s, size_t len)
{
	uint32_t hash, slot, id;
	struct istr *e;
	bool found;

	if (len >= UINT32_MAX || str_reserve(t) < 0)
		return 0;
	hash = (uint32_t)hash_bytes(t->seed, s, len);
	slot = str_slot(t, hash, s, len, &found);
	if (found) {
		t->strs[t->sidx[slot]]->refs++;
		return t->sidx[slot];
	}
	e = malloc(sizeof(*e) + len + 1);
	if (!e)
		return 0;
	id = str_new_id(t);
	if (!id) {
		free(e);
		return 0;
	}
	*e = (struct istr){.refs = 1, .len = (uint32_t)len, .hash = hash};
	memcpy(e->s, s, len);
	e->s[len] = '\0';
	t->strs[id] = e;
	if (t->sidx[slot] == TOMBSTONE)
		t->stomb--;
	t->sidx[slot] = id;
	t->sused++;
	t->live_strings++;
	t->string_bytes += sizeof(*e) + len + 1;
	return id;
}

uint32_t intern_find(const struct intern *t, const char *s, size_t len)
{
	uint32_t hash, slot;
	bool found;

	if (t->sslots == 0 || len >= UINT32_MAX)
		return 0;
	hash = (uint32_t)hash_bytes(t->seed, s, len);
	slot = str_slot(t, hash, s, len, &found);
	return found ? t->sidx[slot] : 0;
}

void intern_ref(struct intern *t, uint32_t id)
{
	if (id)
		t->strs[id]->refs++;
}

static void str_remove(struct intern *t, uint32_t id)
{
	struct istr *e = t->strs[id];
	uint32_t mask = t->sslots - 1, i = e->hash & mask;

	while (t->sidx[i] != id)
		i = (i + 1) & mask;
	t->sidx[i] = TOMBSTONE;
	t->stomb++;
	t->sused--;
	t->live_strings--;
	t->string_bytes -= sizeof(*e) + e->len + 1;
	free(e);
	t->strs[id] = NULL;
	if (t->nfree == t->capfree) {
		uint32_t cap = t->capfree ? t->capfree * 2 : 64;
		uint32_t *v = realloc(t->free_ids, cap * sizeof(*v));

		if (!v)
			return; /* the id is leaked, never reused: harmless */
		t->free_ids = v;
		t->capfree = cap;
	}
	t->free_ids[t->nfree++] = id;
}

void intern_unref(struct intern *t, uint32_t id)
{
	if (id && --t->strs[id]->refs == 0)
		str_remove(t, id);
}

const char *intern_str(const struct intern *t, uint32_t id)
{
	return id ? t->strs[id]->s : "";
}

size_t intern_len(const struct intern *t, uint32_t id)
{
	return id ? t->strs[id]->len : 0;
}

/* ---- blobs -------------------------------------------------------------- */

static uint32_t blob_slot(const struct intern *t, uint64_t hash, const void *data, size_t len,
                          bool *found)
{
	uint32_t mask = t->bslots - 1, i = (uint32_t)hash & mask, insert = UINT32_MAX;

	for (;; i = (i + 1) & mask) {
		struct iblob *b = t->bidx[i];

		if (!b) {
			*found = false;
			return insert != UINT32_MAX ? insert : i;
		}
		if (b == BLOB_TOMBSTONE) {
			if (insert == UINT32_MAX)
				insert = i;
		} else if (b->hash == hash && b->len == len && memcmp(b + 1, data, len) == 0) {
			*found = true;
			return i;
		}
	}
}

static int blob_rehash(struct intern *t, uint32_t slots)
{
	struct iblob **idx = calloc(slots, sizeof(*idx));
	uint32_t i;

	if (!idx)
		return -ENOMEM;
	for (i = 0; i < t->bslots; i++) {
		struct iblob *b = t->bidx[i];
		uint32_t j;

		if (!b || b == BLOB_TOMBSTONE)
			continue;
		for (j = (uint32_t)b->hash & (slots - 1); idx[j]; j = (j + 1) & (slots - 1))
			;
		idx[j] = b;
	}
	free(t->bidx);
	t->bidx = idx;
	t->bslots = slots;
	t->btomb = 0;
	return 0;
}

static int blob_reserve(struct intern *t)
{
	if (t->bslots == 0)
		return blob_rehash(t, MIN_SLOTS);
	if ((uint64_t)(t->bused + t->btomb + 1) * 10 > (uint64_t)t->bslots * 7)
		return blob_rehash(t,
		                   (t->bused + 1) * 10 > t->bslots * 3 ? t->bslots * 2 : t->bslots);
	return 0;
}

const void *intern_blob(struct intern *t, const void *data, size_t len, int *created)
{
	uint64_t hash;
	uint32_t slot;
	struct iblob *b;
	bool found;

	if (len >= UINT32_MAX || blob_reserve(t) < 0)
		return NULL;
	hash = hash_bytes(t->seed, data, len);
	slot = blob_slot(t, hash, data, len, &found);
	if (created)
		*created = !found;
	if (found) {
		t->bidx[slot]->refs++;
		return t->bidx[slot] + 1;
	}
	b = malloc(sizeof(*b) + len);
	if (!b)
		return NULL;
	*b = (struct iblob){.refs = 1, .len = (uint32_t)len, .hash = hash};
	memcpy(b + 1, data, len);
	if (t->bidx[slot] == BLOB_TOMBSTONE)
		t->btomb--;
	t->bidx[slot] = b;
	t->bused++;
	t->live_blobs++;
	t->blob_bytes += sizeof(*b) + len;
	return b + 1;
}

uint32_t intern_blob_refs(const void *blob)
{
	return ((const struct iblob *)blob - 1)->refs;
}

size_t intern_blob_len(const void *blob)
{
	return ((const struct iblob *)blob - 1)->len;
}

void intern_blob_ref(struct intern *t, const void *blob)
{
	(void)t;
	if (blob)
		((struct iblob *)blob - 1)->refs++;
}

void intern_blob_unref(struct intern *t, const void *blob)
{
	struct iblob *b;
	uint32_t mask, i;

	if (!blob)
		return;
	b = (struct iblob *)blob - 1;
	if (--b->refs)
		return;
	mask = t->bslots - 1;
	for (i = (uint32_t)b->hash & mask; t->bidx[i] != b; i = (i + 1) & mask)
		;
	t->bidx[i] = BLOB_TOMBSTONE;
	t->btomb++;
	t->bused--;
	t->live_blobs--;
	t->blob_bytes -= sizeof(*b) + b->len;
	free(b);
}

void intern_stats(const struct intern *t, struct intern_stats *out)
{
	*out = (struct intern_stats){
	    .strings = t->live_strings,
	    .string_bytes = t->string_bytes,
	    .blobs = t->live_blobs,
	    .blob_bytes = t->blob_bytes,
	    .table_bytes =
	        (size_t)t->sslots * sizeof(*t->sidx) + (size_t)t->bslots * sizeof(*t->bidx) +
	        (size_t)t->capstrs * sizeof(*t->strs) + (size_t)t->capfree * sizeof(*t->free_ids),
	};
}
