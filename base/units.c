/*
 * Units as people write them: durations ("90s", "1h30m", "500ms", or bare
 * seconds as an annotation carries them) and amounts written back in the
 * shortest exact form ("16", "500m", "64Gi"). See units.h.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/units.h"

/* Units accepted, longest suffix first so "ms" is not read as "m". */
static const struct {
	const char *suffix;
	int64_t ms;
} duration_units[] = {
    {"ms", 1},
    {"h", 3600000},
    {"m", 60000},
    {"s", 1000},
};

/* The unit at s[0..len), its length in *used and its size in *ms. */
static int duration_unit(const char *s, size_t len, size_t *used, int64_t *ms)
{
	for (size_t i = 0; i < sizeof(duration_units) / sizeof(duration_units[0]); i++) {
		size_t n = strlen(duration_units[i].suffix);

		if (len >= n && memcmp(s, duration_units[i].suffix, n) == 0) {
			*used = n;
			*ms = duration_units[i].ms;
			return 0;
		}
	}
	return -EINVAL;
}

/* The decimal digits at s[*i..len) into *n, advancing *i past them.
 * -EINVAL when there are none, -ERANGE when they overflow an int64. */
static int duration_number(const char *s, size_t len, size_t *i, int64_t *n)
{
	size_t start = *i;

	*n = 0;
	for (; *i < len && s[*i] >= '0' && s[*i] <= '9'; (*i)++)
		if (__builtin_mul_overflow(*n, 10, n) || __builtin_add_overflow(*n, s[*i] - '0', n))
			return -ERANGE;
	return *i == start ? -EINVAL : 0;
}

/* Whole numbers only: Go's fractions ("1.5h") and units below a
 * millisecond ("ns", "us") are not accepted. "0" alone is zero. A NUL
 * byte is not a digit nor a unit, so it is refused like any other. */
int units_duration_ms(const char *s, size_t len, int64_t *ms)
{
	int64_t total = 0;
	size_t i = 0;

	if (len == 1 && s[0] == '0') {
		*ms = 0;
		return 0;
	}
	if (len == 0)
		return -EINVAL;
	while (i < len) {
		int64_t n, unit;
		size_t used;
		int rc = duration_number(s, len, &i, &n);

		if (rc)
			return rc;
		if (duration_unit(s + i, len - i, &used, &unit))
			return -EINVAL;
		i += used;
		if (__builtin_mul_overflow(n, unit, &n) || __builtin_add_overflow(total, n, &total))
			return -ERANGE;
	}
	*ms = total;
	return 0;
}

/* The annotation's form adds bare seconds ("600") to the file's; every
 * failure is -EINVAL, as the caller only needs to know it cannot use it. */
int units_duration_parse(const char *s, size_t len, int64_t *ms)
{
	int64_t n, v;
	size_t i = 0;

	if (!s || len == 0 || len > UNITS_MAX_DURATION_TEXT)
		return -EINVAL;
	if (duration_number(s, len, &i, &n) == 0 && i == len) {
		if (__builtin_mul_overflow(n, 1000, &v))
			return -EINVAL;
	} else if (units_duration_ms(s, len, &v)) {
		return -EINVAL;
	}
	*ms = v;
	return 0;
}

void units_format_amount(char *buf, size_t len, const char *res, int64_t v)
{
	static const char *const bin[] = {"Ki", "Mi", "Gi", "Ti", "Pi"};
	int u = -1;

	if (v == UNITS_UNLIMITED) {
		snprintf(buf, len, "unlimited");
	} else if (strcmp(res, "cpu") == 0) {
		if (v % 1000 == 0)
			snprintf(buf, len, "%lld", (long long)(v / 1000));
		else
			snprintf(buf, len, "%lldm", (long long)v);
	} else if (strcmp(res, "memory") == 0 || strcmp(res, "ephemeral-storage") == 0) {
		while (u < 4 && v != 0 && v % (1ll << (10 * (u + 2))) == 0)
			u++;
		if (u < 0)
			snprintf(buf, len, "%lld", (long long)v);
		else
			snprintf(buf, len, "%lld%s", (long long)(v >> (10 * (u + 1))), bin[u]);
	} else {
		snprintf(buf, len, "%lld", (long long)v);
	}
}
