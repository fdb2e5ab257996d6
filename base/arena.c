/* The cycle arena (arena.h). */
#include "base/arena.h"

#include <stdalign.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_BLOCK (1u << 20)

struct arena_block {
	struct arena_block *next;
	size_t size, used;
	alignas(max_align_t) unsigned char data[];
};

/* A block of at least size bytes: the smallest spare that holds it, else
 * a new one. O(spares). */
static struct arena_block *block_new(struct arena *a, size_t size, struct arena_block *next)
{
	struct arena_block **best = NULL, *b;

	for (struct arena_block **at = &a->spare; *at; at = &(*at)->next)
		if ((*at)->size >= size && (!best || (*at)->size < (*best)->size))
			best = at;
	if (best) {
		b = *best;
		*best = b->next;
	} else if (!(b = malloc(sizeof(*b) + size))) {
		return NULL;
	} else {
		b->size = size;
	}
	b->next = next;
	b->used = 0;
	return b;
}

static void free_list(struct arena_block *b)
{
	while (b) {
		struct arena_block *next = b->next;

		free(b);
		b = next;
	}
}

void *arena_alloc(struct arena *a, size_t n)
{
	const size_t align = alignof(max_align_t);
	struct arena_block *b = a->head;
	size_t need = (n + align - 1) & ~(align - 1);

	if (need < n)
		return NULL;
	if (!b || b->size - b->used < need) {
		size_t size = need > ARENA_BLOCK ? need : ARENA_BLOCK;

		if (need > ARENA_BLOCK && b) {
			/* A big one goes behind the current block, which keeps
			 * its free space for the small ones that follow. */
			struct arena_block *big = block_new(a, size, b->next);

			if (!big)
				return NULL;
			b->next = big;
			big->used = need;
			a->used_total += need;
			return big->data;
		}
		if (!(b = block_new(a, size, a->head)))
			return NULL;
		a->head = b;
	}
	b->used += need;
	a->used_total += need;
	return b->data + b->used - need;
}

void *arena_calloc(struct arena *a, size_t n, size_t size)
{
	void *p;

	if (size && n > SIZE_MAX / size)
		return NULL;
	p = arena_alloc(a, n * size);
	if (p)
		memset(p, 0, n * size);
	return p;
}

void arena_reset(struct arena *a)
{
	struct arena_block *b = a->head;

	free_list(a->spare); /* the last cycle did not need them */
	a->spare = NULL;
	while (b) {
		struct arena_block *next = b->next;

		b->next = a->spare;
		a->spare = b;
		b = next;
	}
	a->head = NULL;
	a->used_total = 0;
}

void arena_free(struct arena *a)
{
	free_list(a->head);
	free_list(a->spare);
	a->head = a->spare = NULL;
	a->used_total = 0;
}

int arena_grow(struct arena *a, void *vp, size_t n, size_t *cap, size_t size, size_t first)
{
	void **v = vp, *nv;
	size_t ncap;

	if (n < *cap)
		return 0;
	ncap = *cap ? 2 * *cap : first;
	if (ncap > SIZE_MAX / size || !(nv = arena_alloc(a, ncap * size)))
		return -ENOMEM;
	if (n)
		memcpy(nv, *v, n * size);
	*v = nv;
	*cap = ncap;
	return 0;
}
