/*
 * The process's heap, told how a scheduler uses it: a few big arrays,
 * made and freed again every cycle or every full read of the pods (the
 * pod table's sort at 100,000 nodes takes 280 MB for a moment).
 *
 * glibc hands a block past its mmap threshold (at most 32 MB, moving)
 * straight from the kernel and back on free, so each such array is
 * faulted in again page by page every time: a fifth of a full cycle at
 * 100,000 nodes, and none at 5,000, where the arrays fit under the
 * threshold (so the cost per node grew with the cluster). Kept in the
 * heap instead, a freed block is there for the next one.
 *
 * Cost: memory freed is not given back to the kernel; the resident size
 * stays at the process's high-water mark (plan_cycle's peak at 100,000
 * nodes: 2,173 MB against 2,062).
 */
#ifndef MUSTER_BASE_HEAP_H
#define MUSTER_BASE_HEAP_H

/** Keep big blocks in the heap once freed. Call once, at start, before
 *  the big allocations; 0, or -EINVAL when the allocator refused (it
 *  then works as before). */
int heap_keep_big_blocks(void);

#endif
