/*
 * base/quantity: tables of quantity strings and the exact value and
 * milli-value each must produce, or the error.
 *
 * Expected numbers were worked out by hand and cross-checked against
 * k8s.io/apimachinery v0.35.4 resource.ParseQuantity where upstream does
 * not overflow; the rows marked "upstream" are where this module differs
 * on purpose (see base/quantity.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/quantity.h"

/* Written before each call; an error must leave it untouched. */
#define SENTINEL INT64_C(0x5a5a5a5a5a5a5a5a)

struct row {
	const char *in;
	int value_rc;
	int64_t value;
	int milli_rc;
	int64_t milli;
};

/* One row each: a success, a success whose milli-value overflows, an error. */
/* clang-format off */
#define OK(in, value, milli) {in, 0, INT64_C(value), 0, INT64_C(milli)}
#define OK_VALUE(in, value, milli_rc) {in, 0, INT64_C(value), milli_rc, 0}
#define BAD(in, rc) {in, rc, 0, rc, 0}
/* clang-format on */

#define ROWS(t) (t), sizeof(t) / sizeof((t)[0])

typedef int (*parse_fn)(const char *s, size_t len, int64_t *out);

/* Fails the test, naming the input, unless fn(s, len) gives rc and, on
 * success, want; on failure the output must still hold SENTINEL. */
static void expect(parse_fn fn, const char *name, const char *s, size_t len, int rc, int64_t want)
{
	int64_t got = SENTINEL;
	int got_rc = fn(s, len, &got);

	if (got_rc != rc)
		fail_msg("%s(\"%.*s\") returned %d, want %d", name, (int)len, s, got_rc, rc);
	if (rc == 0 && got != want)
		fail_msg("%s(\"%.*s\") = %" PRId64 ", want %" PRId64, name, (int)len, s, got, want);
	if (rc != 0 && got != SENTINEL)
		fail_msg("%s(\"%.*s\") wrote %" PRId64 " on error", name, (int)len, s, got);
}

static void expect_row(const struct row *r, const char *s, size_t len)
{
	expect(quantity_value, "value", s, len, r->value_rc, r->value);
	expect(quantity_milli, "milli", s, len, r->milli_rc, r->milli);
}

/* Checks every row as written and, for rows without a sign, with a '-'
 * in front: rounding is away from zero and the range symmetric, so the
 * negated input must give the negated result or the same error. */
static void check_rows(const struct row *rows, size_t n)
{
	char neg[QUANTITY_MAX_LEN + 2];
	struct row r;
	size_t i;

	for (i = 0; i < n; i++) {
		expect_row(&rows[i], rows[i].in, strlen(rows[i].in));
		if (rows[i].in[0] == '-' || rows[i].in[0] == '+' || rows[i].in[0] == '\0')
			continue;
		r = rows[i];
		r.value = -r.value;
		r.milli = -r.milli;
		snprintf(neg, sizeof(neg), "-%s", rows[i].in);
		expect_row(&r, neg, strlen(neg));
	}
}

static void test_decimal_suffixes(void **state)
{
	static const struct row rows[] = {
	    OK("1n", 1, 1),
	    OK("1u", 1, 1),
	    OK("1m", 1, 1),
	    OK("1", 1, 1000),
	    OK("1k", 1000, 1000000),
	    OK("1M", 1000000, 1000000000),
	    OK("1G", 1000000000, 1000000000000),
	    OK("1T", 1000000000000, 1000000000000000),
	    OK("1P", 1000000000000000, 1000000000000000000),
	    OK_VALUE("1E", 1000000000000000000, -ERANGE),
	    OK("1000000n", 1, 1),
	    OK("1000001u", 2, 1001),
	    OK("250m", 1, 250),
	    OK("2000m", 2, 2000),
	    OK("2001m", 3, 2001),
	    OK("3k", 3000, 3000000),
	    OK_VALUE("9E", 9000000000000000000, -ERANGE),
	    BAD("10E", -ERANGE),
	};

	(void)state;
	check_rows(ROWS(rows));
}

static void test_binary_suffixes(void **state)
{
	static const struct row rows[] = {
	    OK("1Ki", 1024, 1024000),
	    OK("1Mi", 1048576, 1048576000),
	    OK("1Gi", 1073741824, 1073741824000),
	    OK("1Ti", 1099511627776, 1099511627776000),
	    OK("1Pi", 1125899906842624, 1125899906842624000),
	    OK_VALUE("1Ei", 1152921504606846976, -ERANGE),
	    OK("1.5Gi", 1610612736, 1610612736000),
	    OK("0.5Ki", 512, 512000),
	    OK("0.1Ki", 103, 102400),
	    OK("1.1Mi", 1153434, 1153433600),
	    OK("0.001Ki", 2, 1024),
	    OK("0.0001Ki", 1, 103),
	    OK_VALUE("8191Pi", 9222246136947933184, -ERANGE),
	    BAD("8192Pi", -ERANGE),
	    OK_VALUE("7Ei", 8070450532247928832, -ERANGE),
	    OK_VALUE("7.99999Ei", 9223360507639729740, -ERANGE),
	    /* 2^63 - 1.15...: the fraction rounds up to exactly INT64_MAX */
	    OK_VALUE("7.999999999999999999Ei", 9223372036854775807, -ERANGE),
	    /* 2^63 - 0.115...: rounding up carries into 2^63 */
	    BAD("7.9999999999999999999Ei", -ERANGE),
	    BAD("8Ei", -ERANGE),
	};

	(void)state;
	check_rows(ROWS(rows));
}

static void test_exponents(void **state)
{
	static const struct row rows[] = {
	    OK("1e3", 1000, 1000000),
	    OK("1E3", 1000, 1000000),
	    OK("1e+3", 1000, 1000000),
	    OK("1E+3", 1000, 1000000),
	    OK("1e03", 1000, 1000000),
	    OK("1e0", 1, 1000),
	    OK("1e-0", 1, 1000),
	    OK("1e-3", 1, 1),
	    OK("12E-2", 1, 120),
	    OK("129e-3", 1, 129),
	    OK("1.5e3", 1500, 1500000),
	    OK(".5e1", 5, 5000),
	    OK("1.e3", 1000, 1000000),
	    OK("25e-1", 3, 2500),
	    OK("1e-4", 1, 1),
	    OK("11e-4", 1, 2),
	    OK_VALUE("1e18", 1000000000000000000, -ERANGE),
	    OK("1e15", 1000000000000000, 1000000000000000000),
	    OK_VALUE("9.223372036854775807e18", 9223372036854775807, -ERANGE),
	    BAD("9.223372036854775808e18", -ERANGE),
	    BAD("1e19", -ERANGE),
	    BAD("1e30", -ERANGE),
	    OK("1e-30", 1, 1),
	    OK("0e30", 0, 0),
	    /* upstream rejects exponents beyond int64 and truncates ones beyond int32 */
	    BAD("1e4294967296", -ERANGE),
	    BAD("1e99999999999999999999999999999999", -ERANGE),
	    OK("1e-99999999999999999999999999999999", 1, 1),
	    OK("0e99999999999999999999999999999999", 0, 0),
	    BAD("1e", -EINVAL),
	    BAD("1E+", -EINVAL),
	    BAD("1e+", -EINVAL),
	    BAD("1e-", -EINVAL),
	    BAD("1.5e", -EINVAL),
	    BAD("1e1.5", -EINVAL),
	    BAD("1e.5", -EINVAL),
	    BAD("1e--3", -EINVAL),
	    BAD("1e+-3", -EINVAL),
	    BAD("1ee3", -EINVAL),
	    BAD("1Ee3", -EINVAL),
	    BAD("1e3Ki", -EINVAL),
	    BAD("1e3m", -EINVAL),
	    BAD("1e3 ", -EINVAL),
	    BAD("e3", -EINVAL),
	};

	(void)state;
	check_rows(ROWS(rows));
}

static void test_fractions_round_up(void **state)
{
	static const struct row rows[] = {
	    OK("0.5", 1, 500),
	    OK(".5", 1, 500),
	    OK("5.", 5, 5000),
	    OK("1.0", 1, 1000),
	    OK("1.000000", 1, 1000),
	    OK("1.0001", 2, 1001),
	    OK("0.0001", 1, 1),
	    OK("0.0011", 1, 2),
	    OK("0.001", 1, 1),
	    OK("2.999", 3, 2999),
	    OK("100m", 1, 100),
	    OK("1.5m", 1, 2),
	    OK("1.5u", 1, 1),
	    OK("0.5n", 1, 1),
	    OK("0.000000000000000000000000001", 1, 1),
	    OK("999999999999999999999e-10", 100000000000, 100000000000000),
	    OK("0007", 7, 7000),
	    OK("000.250", 1, 250),
	    OK("00000000000000000000000000000000000000001", 1, 1000),
	};

	(void)state;
	check_rows(ROWS(rows));
}

static void test_zero_and_sign(void **state)
{
	static const struct row rows[] = {
	    OK("0", 0, 0),
	    OK("-0", 0, 0),
	    OK("+0", 0, 0),
	    OK("0.0", 0, 0),
	    OK("-.0", 0, 0),
	    OK("0Ei", 0, 0),
	    OK("0n", 0, 0),
	    OK("000000", 0, 0),
	    OK("+5", 5, 5000),
	    OK("+1.5Gi", 1610612736, 1610612736000),
	    OK("-1", -1, -1000),
	    OK("-0.5", -1, -500),
	    OK("-1.5", -2, -1500),
	    OK("-1n", -1, -1),
	    /* upstream: ParseQuantity rounds to -2n, then Value() says +1 */
	    OK("-1.5n", -1, -1),
	    OK("-2.5e-1", -1, -250),
	    OK("-1.5Gi", -1610612736, -1610612736000),
	};

	(void)state;
	check_rows(ROWS(rows));
}

static void test_int64_boundary(void **state)
{
	static const struct row rows[] = {
	    OK_VALUE("9223372036854775807", 9223372036854775807, -ERANGE),
	    OK_VALUE("-9223372036854775807", -9223372036854775807, -ERANGE),
	    /* the range is symmetric: INT64_MIN itself is out of range */
	    BAD("-9223372036854775808", -ERANGE),
	    BAD("9223372036854775808", -ERANGE),
	    BAD("18446744073709551615", -ERANGE),
	    BAD("18446744073709551616", -ERANGE),
	    BAD("99999999999999999999999999999999999999", -ERANGE),
	    OK("9223372036854775807m", 9223372036854776, 9223372036854775807),
	    OK("9223372036854775807e-3", 9223372036854776, 9223372036854775807),
	    OK("9223372036854775.807", 9223372036854776, 9223372036854775807),
	    OK_VALUE("9223372036854775808m", 9223372036854776, -ERANGE),
	    /* rounding up is what overflows */
	    OK_VALUE("9223372036854775.8071", 9223372036854776, -ERANGE),
	    OK_VALUE("9223372036854775806.5", 9223372036854775807, -ERANGE),
	    BAD("9223372036854775807.1", -ERANGE),
	    OK("9223372036854775807n", 9223372037, 9223372036855),
	    OK_VALUE("8796093022207Mi", 9223372036853727232, -ERANGE),
	    BAD("8796093022208Mi", -ERANGE),
	};

	(void)state;
	check_rows(ROWS(rows));
}

static void test_malformed(void **state)
{
	static const struct row rows[] = {
	    BAD("", -EINVAL),
	    BAD(" ", -EINVAL),
	    BAD(" 1", -EINVAL),
	    BAD("1 ", -EINVAL),
	    BAD("\t1", -EINVAL),
	    BAD("1\n", -EINVAL),
	    BAD("1 Gi", -EINVAL),
	    /* upstream's parser reads these as 0; its OpenAPI pattern rejects them */
	    BAD("+", -EINVAL),
	    BAD("-", -EINVAL),
	    BAD(".", -EINVAL),
	    BAD("-.", -EINVAL),
	    BAD("Ki", -EINVAL),
	    BAD("m", -EINVAL),
	    BAD("--1", -EINVAL),
	    BAD("+-1", -EINVAL),
	    BAD("-+1", -EINVAL),
	    BAD("1-", -EINVAL),
	    BAD("..5", -EINVAL),
	    BAD("1..5", -EINVAL),
	    BAD("1.5.5", -EINVAL),
	    BAD("1.1.M", -EINVAL),
	    BAD("1,5", -EINVAL),
	    BAD("0x10", -EINVAL),
	    BAD("1/2", -EINVAL), /* '/' and ':' border the digits in ASCII */
	    BAD("1:", -EINVAL),
	    BAD("1Zi", -EINVAL),
	    BAD("1Yi", -EINVAL),
	    BAD("1KB", -EINVAL),
	    BAD("1kb", -EINVAL),
	    BAD("1mi", -EINVAL),
	    BAD("1ki", -EINVAL),
	    BAD("1K", -EINVAL),
	    BAD("1Kib", -EINVAL),
	    BAD("1KiKi", -EINVAL),
	    BAD("1i", -EINVAL),
	    BAD("1b", -EINVAL),
	    BAD("1mm", -EINVAL),
	    BAD("1Gi1", -EINVAL),
	    BAD("NaN", -EINVAL),
	    BAD("inf", -EINVAL),
	    BAD("1\xc2\xb5", -EINVAL), /* "1µ" */
	    BAD("\xd9\xa1", -EINVAL),  /* ARABIC-INDIC DIGIT ONE */
	    BAD("1\xff", -EINVAL),
	};

	(void)state;
	check_rows(ROWS(rows));
}

/* The length, not a NUL, ends the input: bytes past it are never read or
 * taken into account. */
static void test_length_not_nul(void **state)
{
	static const char exact[3] = {'1', 'K', 'i'}; /* no terminator at all */
	static const char nul_inside[] = "1\0Gi";
	static const struct row one_ki = OK("", 1024, 1024000);
	static const struct row one_g = OK("", 1000000000, 1000000000000);
	static const struct row one = OK("", 1, 1000);
	static const struct row bad = BAD("", -EINVAL);

	(void)state;
	expect_row(&one_ki, exact, sizeof(exact));
	expect_row(&one_g, "1Gi", 2);
	expect_row(&one, "1Gigantic", 1);
	expect(quantity_milli, "milli", "1500mXYZ", 5, 0, 1500);
	expect(quantity_milli, "milli", "1500mXYZ", 4, 0, 1500000);
	expect_row(&bad, nul_inside, 4);
	expect_row(&bad, "1Gi", 4); /* the terminating NUL counted in */
	expect_row(&bad, "1Gi", 0);
}

static void test_bad_arguments(void **state)
{
	static const struct row bad = BAD("", -EINVAL);

	(void)state;
	expect_row(&bad, NULL, 0);
	expect_row(&bad, NULL, 3);
	assert_int_equal(quantity_value("1", 1, NULL), -EINVAL);
	assert_int_equal(quantity_milli("1", 1, NULL), -EINVAL);
}

/* Fills a heap buffer of exactly len bytes (no terminator, so ASan sees
 * any read past it) from a prefix, a repeated byte and a suffix. */
static char *make_input(size_t len, const char *prefix, char fill, const char *suffix)
{
	size_t np = strlen(prefix), ns = strlen(suffix);
	char *s = malloc(len);

	assert_non_null(s);
	assert_true(len >= np + ns);
	memcpy(s, prefix, np);
	memset(s + np, fill, len - np - ns);
	memcpy(s + len - ns, suffix, ns);
	return s;
}

static void expect_long(size_t len, const char *prefix, char fill, const char *suffix,
                        const struct row *want)
{
	char *s = make_input(len, prefix, fill, suffix);

	expect_row(want, s, len);
	free(s);
}

static void test_length_cap(void **state)
{
	const size_t cap = QUANTITY_MAX_LEN;
	static const struct row zero = OK("", 0, 0);
	static const struct row one = OK("", 1, 1);
	static const struct row one_unit = OK("", 1, 1000);
	static const struct row range = BAD("", -ERANGE);
	static const struct row inval = BAD("", -EINVAL);

	(void)state;
	/* at the cap the number is read, whatever its size */
	expect_long(cap, "", '0', "", &zero);
	expect_long(cap, "", '0', "1", &one_unit);
	expect_long(cap, "0.", '0', "1", &one);
	expect_long(cap, "1", '0', "", &range);
	expect_long(cap, "9", '9', "Ei", &range);
	expect_long(cap, "1e-", '9', "", &one);
	expect_long(cap, "1e", '9', "", &range);
	/* one byte more is refused before it is read */
	expect_long(cap + 1, "", '0', "", &inval);
	expect_long(cap + 1, "0.", '0', "1", &inval);
	expect_long(10000, "", '9', "", &inval);
	expect_long(10000, "", '0', "", &inval);
	expect_long(10000, "0.", '0', "1", &inval);
}

/* Long digit strings whose exponent brings them back into range: the
 * exponent must be kept exactly as far as any digit string can reach. */
static void test_long_mantissa_exponent(void **state)
{
	static const struct row e5 = OK("", 100000, 100000000);
	static const struct row e4 = OK("", 10000, 10000000);

	(void)state;
	expect_long(116, "1", '0', "e-105", &e5);  /* 10^110 * 10^-105 */
	expect_long(117, "0.", '0', "1e115", &e4); /* 10^-111 * 10^115 */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_decimal_suffixes),
	    cmocka_unit_test(test_binary_suffixes),
	    cmocka_unit_test(test_exponents),
	    cmocka_unit_test(test_fractions_round_up),
	    cmocka_unit_test(test_zero_and_sign),
	    cmocka_unit_test(test_int64_boundary),
	    cmocka_unit_test(test_malformed),
	    cmocka_unit_test(test_length_not_nul),
	    cmocka_unit_test(test_bad_arguments),
	    cmocka_unit_test(test_length_cap),
	    cmocka_unit_test(test_long_mantissa_exponent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
