/*
 * An arena: the scratch memory of one scheduling cycle. Allocation is a
 * pointer bump inside 1 MiB blocks (bigger requests get a block of their
 * own); nothing is freed alone; arena_reset() keeps the first block for
 * the next cycle and frees the rest, so a steady cycle costs no malloc.
 */
#ifndef MUSTER_BASE_ARENA_H
#define MUSTER_BASE_ARENA_H

#include <stddef.h>

struct arena_block;

struct arena {
	struct arena_block *head; /* newest block first */
	size_t used_total;        /* bytes handed out since the last reset */
};

/** n bytes aligned for any type, or NULL when out of memory. */
void *arena_alloc(struct arena *a, size_t n);

/** As arena_alloc(), zeroed; n x size checked for overflow. */
void *arena_calloc(struct arena *a, size_t n, size_t size);

/**
 * Room for element n of the array *vp (elements of `size` bytes, *cap of
 * them): when n == *cap, a new array twice as large (`first` elements the
 * first time) with the n elements copied over. 0 or -ENOMEM. The old
 * array stays in the arena until the reset: growth by doubling wastes at
 * most as much as it keeps.
 */
int arena_grow(struct arena *a, void *vp, size_t n, size_t *cap, size_t size, size_t first);

/** Forget everything allocated; keep one block. */
void arena_reset(struct arena *a);

/** Free every block. */
void arena_free(struct arena *a);

#endif /* MUSTER_BASE_ARENA_H */
