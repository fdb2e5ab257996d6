/*
 * Stable sorts of 64-bit keys for tables of millions of records (the
 * plan's pod table: by address to read the pods in memory order, by gang
 * to put a gang's records in a row), where a qsort's comparisons were a
 * quarter of a cycle. An LSD radix sort, 8 bits a digit (256 counters
 * stay in L1; 65,536 did not), over the digits whose bits differ in some
 * key (radix_order()) or that the keys' span covers (radix_sort(), the
 * keys read less the least): one read finds those bits, one counts every
 * digit, and each digit then costs a read and a write of the items.
 * Items are 8 bytes: a position rides in the low bits below the key,
 * where 16-byte pairs of key and position moved twice the memory (at 3.5
 * million records both arrays are past the L3 cache). Cost: O(n) a
 * differing digit, and a scratch array as large as the input.
 */
#ifndef MUSTER_BASE_RADIX_H
#define MUSTER_BASE_RADIX_H

#include <stddef.h>
#include <stdint.h>

/** a[0..n) sorted by their bits from bit low up, stably (items the same
 *  there keep their order; low 0: by the whole item), with b[0..n) as
 *  scratch: returns a or b, whichever holds the result. */
uint64_t *radix_sort(uint64_t *a, uint64_t *b, size_t n, unsigned low);

/**
 * The positions 0..n) in the order of the keys v[0..n) held on entry,
 * stably (equal keys in position order): *order is v or scratch
 * (n items), whichever holds them; the other is left as scratch. One
 * round of digits where the bits the keys differ in fit above a
 * position; a key wider than that is sorted by its parts in turn, the
 * least first, with a copy of the keys (8 bytes each) while it runs.
 * 0, or -ENOMEM for that copy (v is then lost).
 */
int radix_order(uint64_t *v, uint64_t *scratch, size_t n, uint64_t **order);

#endif /* MUSTER_BASE_RADIX_H */
