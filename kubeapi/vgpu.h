/*
 * The vGPU device protocol of Project-HAMi's volcano-vgpu-device-plugin
 * (HAMi-core enforces the shares in the container), in the texts Volcano
 * v1.15.1 reads and writes (volcano.sh/volcano,
 * pkg/scheduler/api/devices/nvidia/vgpu: decodeNodeDevices,
 * encodePodDevices, DecodePodDevices), byte for byte.
 *
 * The node side. The device plugin registers the node's GPUs in the
 * annotation KUBEAPI_VGPU_REGISTER, one device per ':'-separated piece:
 *
 *     UUID,count,memory,type,health,mode[,...]:UUID,...:
 *
 * count is how many pods may share the GPU (the plugin's split count),
 * memory its device memory in MiB, type its model ("NVIDIA-Tesla V100"),
 * health a Go bool, mode "hami-core" or "mig" (anything else reads as
 * hami-core). A device's id is the position of its piece; pieces without
 * a ',' (the empty one after the last ':') hold no device but count.
 *
 * The pod side. The scheduler writes, before binding, the shares it chose
 * in KUBEAPI_VGPU_IDS (and the same text in KUBEAPI_VGPU_TO_ALLOCATE,
 * which the plugin consumes as containers start): one ';'-separated part
 * per container that asks for vGPUs, in the pod's container order, each
 * a list of "UUID,type,memory,cores:" (memory in MiB, cores in percent of
 * the GPU).
 *
 * Where Volcano is lenient Muster is strict, and says so: Volcano reads a
 * malformed number as 0 and panics on a pod share of fewer than four
 * fields; here either is -EINVAL, and the caller skips the annotation
 * with a log line (a node without a registration keeps whole-GPU
 * accounting).
 *
 * Cost: one pass over the text, no allocation; decoded strings point into
 * it. Counts are capped (KUBEAPI_VGPU_MAX_*): the text comes from
 * outside.
 */
#ifndef MUSTER_KUBEAPI_VGPU_H
#define MUSTER_KUBEAPI_VGPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "kubeapi/model.h"

#define KUBEAPI_VGPU_REGISTER    "volcano.sh/node-vgpu-register"
#define KUBEAPI_VGPU_IDS         "volcano.sh/vgpu-ids-new"
#define KUBEAPI_VGPU_TO_ALLOCATE "volcano.sh/devices-to-allocate"
#define KUBEAPI_VGPU_NODE        "volcano.sh/vgpu-node"
#define KUBEAPI_VGPU_TIME        "volcano.sh/vgpu-time"
#define KUBEAPI_VGPU_BIND_TIME   "volcano.sh/bind-time"
#define KUBEAPI_VGPU_BIND_PHASE  "volcano.sh/bind-phase"
/* The resources a pod asks for vGPUs with (Volcano's defaults). */
#define KUBEAPI_VGPU_NUMBER     "volcano.sh/vgpu-number"
#define KUBEAPI_VGPU_MEMORY     "volcano.sh/vgpu-memory"
#define KUBEAPI_VGPU_MEMORY_PCT "volcano.sh/vgpu-memory-percentage"
#define KUBEAPI_VGPU_CORES      "volcano.sh/vgpu-cores"

/* Bytes of the decoded text, not NUL-terminated. */
struct kubeapi_vgpu_text {
	const char *p;
	size_t len;
};

/* One physical GPU as the device plugin registered it. */
struct kubeapi_vgpu_device {
	uint32_t id; /* the position of its piece (Volcano's GPUDevice.ID) */
	struct kubeapi_vgpu_text uuid, type, mode;
	uint32_t split;  /* pods that may share it */
	uint32_t memory; /* MiB */
	bool healthy;
	bool mig; /* mode "mig"; anything else is hami-core */
};

/* One share of one GPU held by one container of a pod. */
struct kubeapi_vgpu_share {
	uint32_t container; /* among the pod's containers that ask for vGPUs */
	struct kubeapi_vgpu_text uuid, type;
	uint32_t memory; /* MiB */
	uint32_t cores;  /* percent of the GPU */
};

/**
 * The devices of registration s[0..len) into out[0..cap), *n of them.
 * 0; -ENOENT when s has no ':' (Volcano: no devices); -EINVAL when a piece
 * is malformed (fewer than six fields, a number or bool that is not one);
 * -E2BIG past cap devices.
 */
int kubeapi_vgpu_decode_node(const char *s, size_t len, struct kubeapi_vgpu_device *out, size_t cap,
                             size_t *n);

/**
 * The shares of a pod's KUBEAPI_VGPU_IDS text s[0..len) into
 * out[0..cap), *n of them, and the number of container parts in
 * *ncontainers (an empty text has none). 0, -EINVAL (a share of fewer
 * than four fields, a number that is not one), -E2BIG past cap.
 */
int kubeapi_vgpu_decode_pod(const char *s, size_t len, struct kubeapi_vgpu_share *out, size_t cap,
                            size_t *n, size_t *ncontainers);

/**
 * Append to out the KUBEAPI_VGPU_IDS text of shares v[0..n) (sorted by
 * container) for ncontainers container parts, exactly as Volcano's
 * encodePodDevices writes it. 0, -EINVAL (a share's container out of
 * range or out of order), or buf_append()'s error.
 */
int kubeapi_vgpu_encode_pod(const struct kubeapi_vgpu_share *v, size_t n, size_t ncontainers,
                            struct buf *out);

#endif /* MUSTER_KUBEAPI_VGPU_H */
