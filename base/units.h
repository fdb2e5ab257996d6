/*
 * Units as people write them, shared by the queue file, the planner's
 * messages and the CLI: durations and resource amounts. Part of the
 * floor: includes nothing of ours.
 */
#ifndef MUSTER_BASE_UNITS_H
#define MUSTER_BASE_UNITS_H

#include <stddef.h>
#include <stdint.h>

/** An amount with no limit (a quota's borrowing or lending limit). */
#define UNITS_UNLIMITED INT64_MAX

/** Longest text units_duration_parse() accepts, in bytes. */
#define UNITS_MAX_DURATION_TEXT 64

/** Parse a Go-style duration ("90s", "1h30m", "500ms", "0") in s[0..len)
 *  into milliseconds, reading no byte past len. Whole numbers only: no
 *  fractions, no unit below a millisecond. Returns 0, -EINVAL if
 *  malformed, -ERANGE if too long for an int64. O(len). */
int units_duration_ms(const char *s, size_t len, int64_t *ms);

/** Parse s[0..len) (need not be NUL-terminated; no byte past len is read)
 *  as a duration into *ms: units_duration_ms()'s syntax or a bare
 *  non-negative integer of seconds ("600"), as the annotation
 *  muster.dev/expected-runtime is written. Returns 0, or -EINVAL (and *ms
 *  untouched) when s is empty, longer than UNITS_MAX_DURATION_TEXT,
 *  malformed, signed, or too large for int64 milliseconds. O(len). */
int units_duration_parse(const char *s, size_t len, int64_t *ms);

/** Amount v of resource res (in the model's units: CPU millicores, bytes,
 *  devices) as a person writes it, into buf: "16", "500m", "64Gi", or
 *  "unlimited" for UNITS_UNLIMITED. */
void units_format_amount(char *buf, size_t len, const char *res, int64_t v);

#endif /* MUSTER_BASE_UNITS_H */
