/*
 * Kubernetes quantities read as exact int64 values.
 *
 * A quantity is parsed into sign * D * 10^exp10 * 2^shift, where D is every
 * digit of the number with the decimal point removed, read as one integer
 * (the point only moves exp10), and the suffix adds to exp10 or sets shift.
 * Scaling to milli-units adds 3 to exp10.
 *
 * The magnitude |D * 10^e * 2^shift| is then split at the decimal point
 * that e implies: the digits to its left form the whole part W, the rest
 * the fraction F in [0, 1), so the result is W * 2^shift + ceil(F * 2^shift).
 * W must fit in 64 bits or the result is out of range anyway; F * 2^shift
 * is computed digit by digit from the right with a carry below 2^60, so no
 * step needs more than 64 bits however long the digit string. Every
 * multiply and add that could wrap is checked.
 */
#include "base/quantity.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

/* Exponents are clamped here while read. For input within the length cap
 * the clamped value decides the result the same way the real one would:
 * below it everything rounds to one unit, above it nothing non-zero fits. */
#define EXP_CLAMP 1000000

/* A parsed quantity: (negative ? -1 : 1) * digits * 10^exp10 * 2^shift. */
struct number {
	bool negative;
	char digits[QUANTITY_MAX_LEN]; /* ASCII '0'..'9', point removed */
	size_t ndigits;
	int64_t exp10;
	unsigned shift;
};

/* The fixed suffixes; "e<n>" and "E<n>" are read by parse_exponent(). */
static const struct suffix {
	const char *name;
	unsigned shift;
	int exp10;
} suffixes[] = {
    {"", 0, 0},    {"n", 0, -9},  {"u", 0, -6},  {"m", 0, -3},  {"k", 0, 3},   {"M", 0, 6},
    {"G", 0, 9},   {"T", 0, 12},  {"P", 0, 15},  {"E", 0, 18},  {"Ki", 10, 0}, {"Mi", 20, 0},
    {"Gi", 30, 0}, {"Ti", 40, 0}, {"Pi", 50, 0}, {"Ei", 60, 0},
};

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Length of the run of decimal digits that starts s[0..len). */
static size_t digit_run(const char *s, size_t len)
{
	size_t i = 0;

	while (i < len && is_digit(s[i]))
		i++;
	return i;
}

/* Reads "[+-]digits[.[digits]]" or "[+-].digits" from the front of s into n
 * and sets *used to the bytes read; -EINVAL if it holds no digit. */
static int parse_mantissa(const char *s, size_t len, struct number *n, size_t *used)
{
	size_t pos = 0, nint, nfrac = 0;

	if (len > 0 && (s[0] == '+' || s[0] == '-')) {
		n->negative = s[0] == '-';
		pos++;
	}
	nint = digit_run(s + pos, len - pos);
	memcpy(n->digits, s + pos, nint);
	pos += nint;
	if (pos < len && s[pos] == '.') {
		pos++;
		nfrac = digit_run(s + pos, len - pos);
		memcpy(n->digits + nint, s + pos, nfrac);
		pos += nfrac;
	}
	if (nint + nfrac == 0)
		return -EINVAL;
	n->ndigits = nint + nfrac;
	n->exp10 = -(int64_t)nfrac;
	*used = pos;
	return 0;
}

/* Reads all of s as "[+-]digits" into *exp, clamped to +-EXP_CLAMP. */
static int parse_exponent(const char *s, size_t len, int64_t *exp)
{
	size_t pos = 0;
	int64_t e = 0;

	if (len > 0 && (s[0] == '+' || s[0] == '-'))
		pos++;
	if (pos == len || digit_run(s + pos, len - pos) != len - pos)
		return -EINVAL;
	for (; pos < len; pos++) {
		e = e * 10 + (s[pos] - '0');
		if (e > EXP_CLAMP)
			e = EXP_CLAMP;
	}
	*exp = s[0] == '-' ? -e : e;
	return 0;
}

/* Applies the suffix, which must be all of s, to n. Cost: one pass over
 * the suffix table. */
static int parse_suffix(const char *s, size_t len, struct number *n)
{
	size_t i;
	int64_t exp;
	int rc;

	for (i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		if (strlen(suffixes[i].name) == len && memcmp(suffixes[i].name, s, len) == 0) {
			n->shift = suffixes[i].shift;
			n->exp10 += suffixes[i].exp10;
			return 0;
		}
	}
	if (len == 0 || (s[0] != 'e' && s[0] != 'E'))
		return -EINVAL;
	rc = parse_exponent(s + 1, len - 1, &exp);
	if (rc == 0)
		n->exp10 += exp;
	return rc;
}

static int parse(const char *s, size_t len, struct number *n)
{
	size_t used;
	int rc;

	if (!s || len == 0 || len > QUANTITY_MAX_LEN)
		return -EINVAL;
	rc = parse_mantissa(s, len, n, &used);
	if (rc == 0)
		rc = parse_suffix(s + used, len - used, n);
	return rc;
}

/* *acc = *acc * 10^len + d[0..len) read as decimal; -ERANGE past UINT64_MAX. */
static int append_digits(uint64_t *acc, const char *d, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		if (__builtin_mul_overflow(*acc, 10u, acc) ||
		    __builtin_add_overflow(*acc, (unsigned)(d[i] - '0'), acc))
			return -ERANGE;
	}
	return 0;
}

/* *acc *= 10^e (e >= 0); -ERANGE past UINT64_MAX. At most 20 steps when
 * *acc is non-zero, none when it is zero. */
static int shift_decimal(uint64_t *acc, int64_t e)
{
	for (; e > 0 && *acc != 0; e--) {
		if (__builtin_mul_overflow(*acc, 10u, acc))
			return -ERANGE;
	}
	return 0;
}

/* ceil(F * 2^shift) for the fraction F = 0.f[0..len), shift <= 60.
 * Multiplies digit by digit from the right; the carry is floor(the fraction
 * so far * 2^shift) < 2^60, so digit * 2^shift + carry < 10 * 2^60 < 2^64.
 * Cost: O(len). */
static uint64_t fraction_ceil(const char *f, size_t len, unsigned shift)
{
	uint64_t carry = 0, t;
	bool rest = false;

	while (len-- > 0) {
		t = ((uint64_t)(f[len] - '0') << shift) + carry;
		rest = rest || t % 10 != 0;
		carry = t / 10;
	}
	return carry + rest;
}

/* *out = ceil(|n| * 10^scale10), or -ERANGE if that exceeds INT64_MAX. */
static int magnitude(const struct number *n, int64_t scale10, uint64_t *out)
{
	int64_t e = n->exp10 + scale10;
	uint64_t point = e < 0 ? (uint64_t)-e : 0; /* digits right of the point */
	size_t nwhole = point < n->ndigits ? n->ndigits - (size_t)point : 0;
	uint64_t whole = 0, frac;

	if (append_digits(&whole, n->digits, nwhole) < 0 || shift_decimal(&whole, e) < 0 ||
	    __builtin_mul_overflow(whole, (uint64_t)1 << n->shift, &whole))
		return -ERANGE;
	/* When the point lies left of all digits (e < -ndigits) there are zeros
	 * between it and them, which fraction_ceil() does not see. That needs
	 * an exponent or decimal suffix, so shift is 0 and ceil(0.00f) is
	 * ceil(0.f) anyway. */
	frac = fraction_ceil(n->digits + nwhole, n->ndigits - nwhole, n->shift);
	if (__builtin_add_overflow(whole, frac, &whole) || whole > INT64_MAX)
		return -ERANGE;
	*out = whole;
	return 0;
}

/* Parses s and stores its value times 10^scale10, rounded away from zero. */
static int quantity_scaled(const char *s, size_t len, int64_t scale10, int64_t *out)
{
	struct number n = {0};
	uint64_t mag;
	int rc;

	if (!out)
		return -EINVAL;
	rc = parse(s, len, &n);
	if (rc == 0)
		rc = magnitude(&n, scale10, &mag);
	if (rc < 0)
		return rc;
	*out = n.negative ? -(int64_t)mag : (int64_t)mag;
	return 0;
}

int quantity_milli(const char *s, size_t len, int64_t *out)
{
	return quantity_scaled(s, len, 3, out);
}

int quantity_value(const char *s, size_t len, int64_t *out)
{
	return quantity_scaled(s, len, 0, out);
}
