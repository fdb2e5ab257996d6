/*
 * The device-level GPU model of one node: each physical GPU with its
 * memory, how many pods may share it, and what is allocated on it (pods,
 * memory, cores), as the vGPU device protocol (kubeapi/vgpu.h) has it.
 * Plain data and arithmetic: the caller builds the devices from a node's
 * registration and counts in the shares of the pods bound there.
 *
 * The rules for one more share on a GPU are Volcano v1.15.1's
 * (checkNodeGPUSharingPredicateAndScore, hami-core mode), so that what
 * Muster places the device plugin and Volcano's own accounting accept:
 *   - fewer pods on it than its split count;
 *   - the memory asked free on it: an absolute amount in MiB, or a
 *     percentage of its memory, truncated (uint(mem * pct / 100.0));
 *   - its cores (percent) used plus those asked at most 100;
 *   - 100 cores asked means the GPU alone: no other pod on it;
 *   - a GPU whose cores are all used takes no share that asks none.
 * Unlike Volcano, a GPU the plugin registered unhealthy takes nothing.
 *
 * Cost: O(1) a check; placing a pod is O(containers x GPUs of the node).
 */
#ifndef MUSTER_POLICY_GPUS_H
#define MUSTER_POLICY_GPUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kubeapi/model.h"

/* One physical GPU and what is allocated on it. */
struct policy_gpu {
	uint32_t id;     /* its position in the node's registration */
	uint32_t uuid;   /* its UUID's interned id (0: none known) */
	uint32_t memory; /* MiB */
	uint32_t split;  /* pods that may share it */
	uint32_t used_num, used_mem, used_core;
	bool healthy;
};

/* What one container asks is kubeapi's struct kubeapi_vgpu_ask (Volcano's
 * ContainerDeviceRequest): nums GPUs, on each mem MiB (or mem_pct percent
 * of its memory, when not KUBEAPI_VGPU_NO_PCT) and cores percent of its
 * cores. The policy reads it as the pod spec holds it. */

/* A share chosen: container c of the pod gets mem MiB and cores percent
 * of GPU index gpu (into the node's array). */
struct policy_vgpu_share {
	uint32_t container, gpu;
	uint32_t mem, cores;
};

/** The memory ask a takes on GPU g, in MiB. */
uint32_t policy_vgpu_mem_for(const struct policy_gpu *g, const struct kubeapi_vgpu_ask *a);

/** Whether GPU g takes one more share of ask a now. */
bool policy_vgpu_fits(const struct policy_gpu *g, const struct kubeapi_vgpu_ask *a);

/** Count a share of mem MiB and cores percent onto GPU g (sign +1) or off
 *  it (-1). Usage never goes below zero. */
void policy_vgpu_use(struct policy_gpu *g, uint32_t mem, uint32_t cores, int sign);

/**
 * Place a pod's containers asks[0..nasks) on the node's GPUs
 * gpus[0..ngpus), each container's GPUs distinct, trying GPUs by
 * descending index as Volcano's default order does. 0 with the shares in
 * out[0..*nout) (cap of them) and counted onto the GPUs; -ENOSPC when
 * some container does not fit, the GPUs as before; -E2BIG past cap.
 */
int policy_vgpu_place(struct policy_gpu *gpus, size_t ngpus, const struct kubeapi_vgpu_ask *asks,
                      size_t nasks, struct policy_vgpu_share *out, size_t cap, size_t *nout);

#endif /* MUSTER_POLICY_GPUS_H */
