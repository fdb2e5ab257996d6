/*
 * An arena: the scratch memory of one scheduling cycle. Allocation is a
 * pointer bump inside 1 MiB blocks (bigger requests get a block of their
 * own); nothing is freed alone. arena_reset() keeps every block the cycle
 * used as spare room for the next one and frees the spares it did not
 * use, so a cycle like the last costs no malloc and no page fault: at
 * 100,000 nodes, handing the blocks back and faulting them in again was a
 * fifth of the cycle (issue 18). What stays is the last cycle's size.
 */
#ifndef MUSTER_BASE_ARENA_H
#define MUSTER_BASE_ARENA_H

#include <stddef.h>

struct arena_block;

struct arena {
	struct arena_block *head;  /* newest block first */
	struct arena_block *spare; /* kept by the last reset, not yet reused */
	size_t used_total;         /* bytes handed out since the last reset */
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

/** Forget everything allocated; keep the blocks for reuse (and free the
 *  ones kept by the reset before that were not reused). */
void arena_reset(struct arena *a);

/** Free every block. */
void arena_free(struct arena *a);

#endif /* MUSTER_BASE_ARENA_H */
