/*
 * The GPU map: every GPU of every node as one cell, so fragmentation and
 * reservations show at a glance (/debug/gpus, the page's GPU section,
 * and /debug/nodes).
 *
 * A node's cells are a string, one letter a GPU:
 *   W  in use whole (a whole-GPU pod, or one vGPU share of all its cores)
 *   S  shared: vGPU shares on it, with left[] percent of its cores free
 *      (0 when its memory or share count is used up)
 *   F  free
 *   R  reserved for a waiting gang (whole-GPU nodes: reservations count
 *      whole GPUs)
 *   X  registered unhealthy (or in MIG mode)
 * A node the vGPU device plugin registered has one cell per device, in
 * registration order; any other has one per nvidia.com/gpu, used first,
 * then reserved, then free.
 *
 * Cost: O(nodes x GPUs), and O(nodes log nodes) to group them.
 */
#ifndef MUSTER_SCHEDULER_DEBUG_GPUS_H
#define MUSTER_SCHEDULER_DEBUG_GPUS_H

#include <cjson/cJSON.h>

#include "scheduler/debug/snap.h"

/** Node n's map: {"cells": "WSFF", "left": [50]}, or NULL without GPUs. */
cJSON *debug_gpus_cells(const struct snap *sn, const struct snap_node *n);

/** Node n's registered GPUs with their shares, for /debug/nodes: an
 *  array (empty for a node without). */
cJSON *debug_gpus_devices(const struct snap_node *n);

/** Add to doc the map of every node with GPUs, grouped by the finest
 *  topology level above the host: "level" (NULL without one), "total"
 *  nodes, and "domains": [{"name", "nodes": [{"name", "cells", "left"}]}]. */
int debug_gpus_domains(const struct snap *sn, cJSON *doc);

#endif /* MUSTER_SCHEDULER_DEBUG_GPUS_H */
