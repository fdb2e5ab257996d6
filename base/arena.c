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

static struct arena_block *block_new(size_t size, struct arena_block *next)
{
	struct arena_block *b = malloc(sizeof(*b) + size);

	if (!b)
		return NULL;
	b->next = next;
	b->size = size;
	b->used = 0;
	return b;
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
			struct arena_block *big = block_new(size, b->next);

			if (!big)
				return NULL;
			b->next = big;
			big->used = need;
			a->used_total += need;
			return big->data;
		}
		if (!(b = block_new(size, a->head)))
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
	struct arena_block *b = a->head, *keep = NULL;

	while (b) {
		struct arena_block *next = b->next;

		if (!keep && b->size == ARENA_BLOCK)
			keep = b;
		else
			free(b);
		b = next;
	}
	if (keep) {
		keep->next = NULL;
		keep->used = 0;
	}
	a->head = keep;
	a->used_total = 0;
}

void arena_free(struct arena *a)
{
	arena_reset(a);
	free(a->head);
	a->head = NULL;
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
