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

static void emit_json(const char *level, const char *when, const char *msg, const char *ns,
                      const char *gang, const char *pod)
{
	cJSON *o = cJSON_CreateObject();
	char *line;

	cJSON_AddStringToObject(o, "time", when);
	cJSON_AddStringToObject(o, "level", level);
	cJSON_AddStringToObject(o, "msg", msg);
	if (ns)
		cJSON_AddStringToObject(o, "namespace", ns);
	if (gang)
		cJSON_AddStringToObject(o, "gang", gang);
	if (pod)
		cJSON_AddStringToObject(o, "pod", pod);
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
	char when[64], msg[8192];

	if (s && (int)level < s->opt.log_level)
		return;
	stamp(when);
	vsnprintf(msg, sizeof(msg), fmt, ap);
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
