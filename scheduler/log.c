/*
 * Logs (sched.h): one line per event on stderr, at a level, as text or
 * as one JSON object per line (--log-format json) for a log pipeline.
 *
 *   text: 2026-11-21T20:30:00.123Z muster: gang a/train: bound pod a/train-0 to gpu-3
 *   json: {"time":"2026-11-21T20:30:00.123Z","level":"info","msg":"...",
 *          "namespace":"a","gang":"train","pod":"train-0"}
 *
 * Levels below the one chosen cost a compare. A line is formatted into a
 * fixed buffer (8 KiB; longer messages are cut) and written with one
 * fputs, so lines from one process never interleave.
 *
 * Messages quote what tenants wrote (annotation values, names of things
 * that do not exist), so every message and field is cleaned here, at the
 * one place lines leave: control characters (C0, DEL, C1), U+2028/2029
 * and bytes that are not UTF-8 become visible escapes (\n, \x1b,
 * \u2028, \xff). A value cannot end a line or start a fake one, and a
 * JSON line is valid JSON whatever the input. Costs one pass over the
 * message.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "scheduler/sched.h"

static const char *const level_name[] = {"debug", "info", "warning", "error"};

static void stamp(char out[64])
{
	struct timespec ts;
	struct tm tm;
	char when[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out, 64, "%s.%03ldZ", when, ts.tv_nsec / 1000000);
}

/* The length of the UTF-8 sequence at p (of n bytes left) if it is a
 * valid, shortest-form encoding of a scalar value, else 0. */
static size_t utf8_len(const unsigned char *p, size_t n, uint32_t *cp)
{
	size_t len = p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : 2;
	uint32_t c = p[0] & (0x7f >> len);

	if (p[0] < 0xc2 || p[0] > 0xf4 || n < len)
		return 0;
	for (size_t k = 1; k < len; k++) {
		if ((p[k] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (p[k] & 0x3f);
	}
	if ((len == 3 && c < 0x800) || (len == 4 && (c < 0x10000 || c > 0x10ffff)) ||
	    (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

/* in, cleaned into out (cap > 0, always NUL-terminated; cut whole escapes
 * at the end when it is full). Exported for the tests through sched.h. */
void sched_log_clean(const char *in, char *out, size_t cap)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)in;
	size_t n = strlen(in), o = 0;

	while (n > 0) {
		char esc[8];
		size_t used = 1, elen = 0;
		uint32_t cp = 0;

		if (*p == '\n' || *p == '\r' || *p == '\t') {
			esc[0] = '\\';
			esc[1] = *p == '\n' ? 'n' : *p == '\r' ? 'r' : 't';
			elen = 2;
		} else if (*p < 0x20 || *p == 0x7f ||
		           (*p >= 0x80 && !(used = utf8_len(p, n, &cp)))) {
			used = 1;
			memcpy(esc, (char[]){'\\', 'x', hex[*p >> 4], hex[*p & 15]}, 4);
			elen = 4;
		} else if (*p >= 0x80 &&
		           ((cp >= 0x80 && cp < 0xa0) || cp == 0x2028 || cp == 0x2029)) {
			snprintf(esc, sizeof(esc), "\\u%04x", (unsigned)cp);
			elen = 6;
		}
		if (o + (elen ? elen : used) >= cap)
			break;
		memcpy(out + o, elen ? esc : (const char *)p, elen ? elen : used);
		o += elen ? elen : used;
		p += used;
		n -= used;
	}
	out[o] = '\0';
}

/* A field cleaned: names are short, so a small buffer does. */
static void add_clean(cJSON *o, const char *key, const char *value)
{
	char buf[4 * 256];

	if (!value)
		return;
	sched_log_clean(value, buf, sizeof(buf));
	cJSON_AddStringToObject(o, key, buf);
}

static void emit_json(const char *level, const char *when, const char *msg, const char *ns,
                      const char *gang, const char *pod)
{
	cJSON *o = cJSON_CreateObject();
	char *line;

	cJSON_AddStringToObject(o, "time", when);
	cJSON_AddStringToObject(o, "level", level);
	cJSON_AddStringToObject(o, "msg", msg);
	add_clean(o, "namespace", ns);
	add_clean(o, "gang", gang);
	add_clean(o, "pod", pod);
	line = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (line) {
		fprintf(stderr, "%s\n", line);
		cJSON_free(line);
	}
}

__attribute__((format(printf, 6, 0))) static void emit(struct sched *s, enum sched_log_level level,
                                                       const char *ns, const char *gang,
                                                       const char *pod, const char *fmt, va_list ap)
{
	char when[64], raw[8192], msg[4 * 8192];

	if (s && (int)level < s->opt.log_level)
		return;
	stamp(when);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	sched_log_clean(raw, msg, sizeof(msg));
	if (s && s->opt.log_json) {
		emit_json(level_name[level], when, msg, ns, gang, pod);
		return;
	}
	fprintf(stderr, "%s muster: %s%s%s\n", when, level == SCHED_INFO ? "" : level_name[level],
	        level == SCHED_INFO ? "" : ": ", msg);
}

void sched_log(struct sched *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(s, SCHED_INFO, NULL, NULL, NULL, fmt, ap);
	va_end(ap);
}

void sched_logl(struct sched *s, enum sched_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(s, level, NULL, NULL, NULL, fmt, ap);
	va_end(ap);
}

void sched_log_gang(struct sched *s, const char *ns, const char *gang, const char *pod,
                    const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(s, SCHED_INFO, ns, gang, pod, fmt, ap);
	va_end(ap);
}
