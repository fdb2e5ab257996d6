/*
 * Kubernetes resource quantities ("500m", "1.5Gi", "12e-3") read as exact
 * int64 values.
 *
 * Grammar, as in apimachinery's resource.Quantity and its OpenAPI pattern:
 *
 *   quantity ::= [+-] number [suffix]
 *   number   ::= digits [. [digits]] | . digits      (at least one digit)
 *   suffix   ::= Ki | Mi | Gi | Ti | Pi | Ei          (2^10 .. 2^60)
 *              | n | u | m | k | M | G | T | P | E   (10^-9 .. 10^18)
 *              | (e | E) [+-] digits                 (10^digits)
 *
 * Nothing else is accepted: no whitespace, no other suffix ("K", "KB",
 * "mi", "Zi"), no fractional exponent. Upstream's parser also reads a bare
 * sign, a bare "." or a bare suffix ("Ki") as zero; its OpenAPI pattern
 * and this module reject them.
 *
 * Values are computed exactly with integer arithmetic, then rounded up in
 * magnitude (away from zero): 0.1 is 1 unit and -0.1 is -1 unit, as
 * Quantity.Value() does for quantities held in an int64. A result whose
 * magnitude exceeds INT64_MAX is -ERANGE for either sign, where upstream
 * would clamp or wrap.
 *
 * No allocation; each call is O(len).
 */
#ifndef MUSTER_BASE_QUANTITY_H
#define MUSTER_BASE_QUANTITY_H

#include <stddef.h>
#include <stdint.h>

/** Longest quantity string accepted, in bytes; longer input is -EINVAL.
 *  Canonical quantities are at most about 25 bytes. */
#define QUANTITY_MAX_LEN 128

/** Parse the quantity s[0..len) (no NUL needed) into milli-units: the
 *  value times 1000, rounded away from zero ("1n" is 1, "-1n" is -1).
 *  Returns 0, -EINVAL if s is malformed or longer than
 *  QUANTITY_MAX_LEN, or -ERANGE if the result does not fit an
 *  int64. *out is written only on success. */
int quantity_milli(const char *s, size_t len, int64_t *out);

/** Parse the quantity s[0..len) (no NUL needed) into whole units (bytes,
 *  cores, devices), rounded away from zero ("0.1" is 1, "-0.1" is -1).
 *  Errors as quantity_milli(). */
int quantity_value(const char *s, size_t len, int64_t *out);

#endif /* MUSTER_BASE_QUANTITY_H */
