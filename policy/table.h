/*
 * Shared by the node table's files (nodes.c, devices.c, place.c) and no
 * one else: the GPU devices' part of building and counting the table.
 */
#ifndef MUSTER_POLICY_TABLE_H
#define MUSTER_POLICY_TABLE_H

#include "policy/policy.h"

/** Lay out every node's registered GPUs (t->gpu, t->gpu_first) and mark
 *  their nodes as GPU nodes. 0 or -ENOMEM. O(nodes + GPUs). */
int policy__nodes_devices(struct policy_nodes *t, struct arena *a);

/** Shares h onto their GPUs (sign -1: taken) or off them (+1); returns
 *  the cores they hold on healthy GPUs, for the domains' totals. */
int64_t policy__held_use(struct policy_nodes *t, const struct policy_held *h, int sign);

#endif /* MUSTER_POLICY_TABLE_H */
