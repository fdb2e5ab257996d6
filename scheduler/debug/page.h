/*
 * The /debug/ page: one static, self-contained HTML document (inline CSS
 * and JS, no external resources) that reads the debug API's queues and
 * gangs documents (DEBUG.md) every 2 s and draws them. Read-only.
 */
#ifndef MUSTER_SCHEDULER_DEBUG_PAGE_H
#define MUSTER_SCHEDULER_DEBUG_PAGE_H

#include <stddef.h>

/** The /debug/ page: static HTML, its length in *len. */
const char *debug_page_html(size_t *len);

#endif /* MUSTER_SCHEDULER_DEBUG_PAGE_H */
