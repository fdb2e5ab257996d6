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
 *
 * And the heap on 2 MB pages where the kernel gives them on request
 * (transparent huge pages in madvise mode, Debian's default): a full
 * cycle at 100,000 nodes reads 3.5 million pods and their records in
 * an order of their own, a TLB miss each on 4 KB pages (the TLB covers
 * 8 MB of them, 4 GB of 2 MB ones), and so the cost per node grew with
 * the cluster. glibc advises the kernel only when a tunable says so, and
 * reads tunables as the program starts: heap_huge_pages() sets it and
 * runs the program again. Cost: the exec, once; memory handed out in 2
 * MB pages (plan_cycle's peak at 100,000 nodes: 2,268 MB against 2,238).
 * An operator who sets glibc.malloc.hugetlb in GLIBC_TUNABLES decides.
 */
#ifndef MUSTER_BASE_HEAP_H
#define MUSTER_BASE_HEAP_H

/** Keep big blocks in the heap once freed. Call once, at start, before
 *  the big allocations; 0, or -EINVAL when the allocator refused (it
 *  then works as before). */
int heap_keep_big_blocks(void);

/**
 * Run this program again (same argv, same pid) with glibc told to back
 * the heap with 2 MB pages, unless it was told already, either way.
 * Call first thing in main, before any thread starts. Returns only when
 * it did not exec: 0 (told already), -ENOTSUP (not glibc on Linux, or a
 * sanitizer's allocator), or the exec's error (the heap then keeps its
 * 4 KB pages).
 */
int heap_huge_pages(char *const argv[]);

#endif
