/*
 * Fuzz target: Kubernetes quantities (base/quantity.c).
 *
 * The input is the quantity text, passed with its exact length and no NUL
 * (libFuzzer's buffer is exactly that long, so ASan sees any read past
 * it). Both parsers run on it, and what base/quantity.h promises about
 * the pair is checked: the same grammar (one rejects what the other
 * rejects), *out untouched on error, and the whole value equal to the
 * milli-value divided by 1000 and rounded away from zero.
 */
#include <errno.h>
#include <stdint.h>

#include "fuzz/fuzz.h"
#include "base/quantity.h"

#define SENTINEL INT64_C(0x5a5a5a5a5a5a5a5a)

/* m / 1000 rounded away from zero; |m| <= INT64_MAX, so no overflow. */
static int64_t milli_to_value(int64_t m)
{
	int64_t q = m / 1000, r = m % 1000;

	return r > 0 ? q + 1 : r < 0 ? q - 1 : q;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	int64_t value = SENTINEL, milli = SENTINEL;
	int value_rc = quantity_value(s, size, &value);
	int milli_rc = quantity_milli(s, size, &milli);

	FUZZ_CHECK(value_rc == 0 || value_rc == -EINVAL || value_rc == -ERANGE);
	FUZZ_CHECK(milli_rc == 0 || milli_rc == -EINVAL || milli_rc == -ERANGE);
	FUZZ_CHECK(value_rc == 0 || value == SENTINEL);
	FUZZ_CHECK(milli_rc == 0 || milli == SENTINEL);
	/* One grammar for both. */
	FUZZ_CHECK((value_rc == -EINVAL) == (milli_rc == -EINVAL));
	if (size > QUANTITY_MAX_LEN)
		FUZZ_CHECK(value_rc == -EINVAL);
	/* A milli-value that fits means the whole value fits, and agrees. */
	if (milli_rc == 0) {
		FUZZ_CHECK(milli != INT64_MIN);
		FUZZ_CHECK(value_rc == 0);
		FUZZ_CHECK(value == milli_to_value(milli));
	}
	return 0;
}
