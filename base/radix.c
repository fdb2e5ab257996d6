#include "base/radix.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define DIGIT_BITS 8
#define DIGITS     (1u << DIGIT_BITS)
#define PASSES_MAX (64 / DIGIT_BITS)

/* Bits needed for v. */
static unsigned bits_of(uint64_t v)
{
	return v ? 64 - (unsigned)__builtin_clzll(v) : 0;
}

/* The bits that differ between some two of a[0..n). */
static uint64_t differ(const uint64_t *a, size_t n)
{
	uint64_t all = UINT64_MAX, any = 0;

	for (size_t k = 0; k < n; k++) {
		all &= a[k];
		any |= a[k];
	}
	return n ? all ^ any : 0;
}

/* a[0..n) sorted stably by the digits from bit low up that have a bit of
 * `bits`, each item read less bias (which the last pass adds back), b[0..n)
 * the scratch, and the last pass writing each item masked by `keep`
 * (every item masked, with no pass; bias then 0). Returns a or b. */
static uint64_t *sort_digits(uint64_t *a, uint64_t *b, size_t n, unsigned low, uint64_t bits,
                             uint64_t keep, uint64_t bias)
{
	size_t count[PASSES_MAX][DIGITS];
	unsigned shift[PASSES_MAX], passes = 0;

	for (unsigned s = low; s < 64; s += DIGIT_BITS)
		if (bits >> s & (DIGITS - 1))
			shift[passes++] = s;
	if (!passes) {
		for (size_t k = 0; keep != UINT64_MAX && k < n; k++)
			a[k] &= keep;
		return a;
	}
	memset(count, 0, passes * sizeof(count[0]));
	for (size_t k = 0; k < n; k++)
		for (unsigned p = 0; p < passes; p++)
			count[p][(a[k] - bias) >> shift[p] & (DIGITS - 1)]++;
	for (unsigned p = 0; p < passes; p++) {
		size_t *c = count[p], sum = 0;
		uint64_t mask = p + 1 == passes ? keep : UINT64_MAX, *swap;
		uint64_t in = p == 0 ? bias : 0, out = p + 1 == passes ? bias : 0;

		for (size_t d = 0; d < DIGITS; d++) {
			size_t here = c[d];

			c[d] = sum;
			sum += here;
		}
		for (size_t k = 0; k < n; k++) {
			uint64_t x = a[k] - in;

			b[c[x >> shift[p] & (DIGITS - 1)]++] = (x + out) & mask;
		}
		swap = a;
		a = b;
		b = swap;
	}
	return a;
}

uint64_t *radix_sort(uint64_t *a, uint64_t *b, size_t n, unsigned low)
{
	uint64_t least = UINT64_MAX, most = 0, span, bits;

	if (low >= 64 || n < 2)
		return a;
	for (size_t k = 0; k < n; k++) {
		least = a[k] < least ? a[k] : least;
		most = a[k] > most ? a[k] : most;
	}
	/* Items read less the least (its bits below low dropped, so that no
	 * item's bits from low up change but by the same amount), so that
	 * their digits are those of the span they cover wherever it lies: a
	 * heap's 1 GB of pods that crosses a multiple of 1 GB differs in bit
	 * 30 too. At 100,000 nodes 24 bits from bit 6, three digits, where
	 * the bits that differed, from bit 4, were four. */
	least = least >> low << low;
	span = most - least;
	bits = span >> low ? (UINT64_MAX >> __builtin_clzll(span)) >> low << low : 0;
	return sort_digits(a, b, n, low, bits, UINT64_MAX, bits ? least : 0);
}

/* Runs of bits the same in every key, below the top bit that differs:
 * dropped from the keys, which leaves their order as it was and their
 * digits fewer (a gang key's namespace and name each fill the low bits
 * of their halves; an address's low bits are its alignment). The widest
 * GAPS_MAX runs; a key keeps any other. */
#define GAPS_MAX 4

struct gaps {
	unsigned n, at[GAPS_MAX], len[GAPS_MAX]; /* highest first */
};

static void find_gaps(uint64_t bits, struct gaps *g)
{
	unsigned at[32], len[32], n = 0, top = bits_of(bits);

	for (unsigned b = 0; b < top; b++) {
		unsigned run = 0;

		if (bits >> b & 1)
			continue;
		while (!(bits >> (b + run) & 1)) /* ends below top, whose bit is set */
			run++;
		at[n] = b;
		len[n++] = run;
		b += run;
	}
	memset(g, 0, sizeof(*g));
	for (unsigned k = n; k-- > 0;) {
		unsigned wider = 0; /* wider than run k, or as wide and higher */

		for (unsigned j = 0; j < n; j++)
			wider += len[j] > len[k] || (len[j] == len[k] && j > k);
		if (wider < GAPS_MAX) {
			g->at[g->n] = at[k];
			g->len[g->n++] = len[k];
		}
	}
}

/* v without the gaps' bits, and without those above the top. */
static uint64_t squeeze(uint64_t v, const struct gaps *g, uint64_t width_mask)
{
	for (unsigned k = 0; k < GAPS_MAX; k++) /* a fixed count, unrolled; unused are 0 */
		v = v >> (g->at[k] + g->len[k]) << g->at[k] | (v & ((1ull << g->at[k]) - 1));
	return v & width_mask;
}
int radix_order(uint64_t *v, uint64_t *scratch, size_t n, uint64_t **order)
{
	unsigned pos = bits_of(n > 1 ? n - 1 : 0), room = 64 - pos, width;
	uint64_t bits = differ(v, n), at = (1ull << pos) - 1, part, all, sq, *keys = NULL, *sorted;
	struct gaps g;

	*order = v;
	if (n < 2 || !bits) {
		for (size_t k = 0; k < n; k++)
			v[k] = k;
		return 0;
	}
	find_gaps(bits, &g);
	width = bits_of(bits);
	for (unsigned k = 0; k < g.n; k++)
		width -= g.len[k];
	all = width == 64 ? UINT64_MAX : (1ull << width) - 1;
	sq = squeeze(bits, &g, all); /* the digits to sort by */
	/* pos >= 1 here: room < 64, and part a shift short of 64 bits. */
	part = (1ull << room) - 1;
	if (width > room && !(keys = malloc(n * sizeof(*keys))))
		return -ENOMEM;
	for (size_t k = 0; k < n; k++) {
		uint64_t key = squeeze(v[k], &g, all);

		if (keys)
			keys[k] = key;
		v[k] = (key & part) << pos | k;
	}
	sorted =
	    sort_digits(v, scratch, n, pos, (sq & part) << pos, width <= room ? at : UINT64_MAX, 0);
	/* Each wider part sorts the order the parts below left, stably:
	 * the same LSD order over parts as over digits. */
	for (unsigned lo = room; lo < width; lo += room) {
		uint64_t *other = sorted == v ? scratch : v;

		for (size_t k = 0; k < n; k++) {
			uint64_t p = sorted[k] & at;

			sorted[k] = (keys[p] >> lo & part) << pos | p;
		}
		sorted = sort_digits(sorted, other, n, pos, (sq >> lo & part) << pos,
		                     lo + room >= width ? at : UINT64_MAX, 0);
	}
	free(keys);
	*order = sorted;
	return 0;
}
