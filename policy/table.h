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

/** Node i's gpu_room and gpu_empty from its GPUs as they are. O(GPUs). */
void policy__node_room(struct policy_nodes *t, size_t i);

/** Shares h onto their GPUs (sign -1: taken) or off them (+1); *cores is
 *  what they hold of healthy GPUs' cores, *empty how many healthy GPUs
 *  they leave holding no share (negative) or free again, for the
 *  domains' totals. */
void policy__held_use(struct policy_nodes *t, const struct policy_held *h, int sign, int64_t *cores,
                      int64_t *empty);

#endif /* MUSTER_POLICY_TABLE_H */
