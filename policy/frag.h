/*
 * GPU fragmentation: how much of a node's free GPU capacity the recent mix
 * of requests could not use, and where on a node one pod raises it least.
 * The idea is the FGD paper's (Weng et al., "Beware of Fragmentation",
 * USENIX ATC'23): free GPU capacity is fragmented for a kind of request
 * when that request cannot use it (too little of a GPU left, or the node
 * lacks the CPU or memory to host it), and the expected fragmentation of a
 * node is the mix-weighted sum over kinds. A placement is good when it
 * raises the node's expected fragmentation least.
 *
 * Exactly, for a node with CPU c and memory m free and GPUs g, each with
 * free(g) percent left (the scarcer of its cores and its memory; 0 for an
 * unhealthy GPU), and a kind k asking nums_k GPUs:
 *
 *   fits_k(g)  = policy_vgpu_fits(g, k's per-GPU ask)      (Volcano's rules)
 *   hosts_k    = cpu_k <= c, mem_k <= m, the node's model is one k may use,
 *                and #{g : fits_k(g)} >= nums_k
 *   unfit_k    = sum of free(g) over g with !fits_k(g)
 *   room_k     = min(c / cpu_k, m / mem_k) x ask_k         (no limit when
 *                k asks neither; ask_k = nums_k x its percent of a GPU)
 *   f_k        = hosts_k ? unfit_k + 1/2 max(0, total - unfit_k - room_k)
 *                        : total                  (total: sum of free(g))
 *   press_k    = count_k x G / (the GPUs of the models k may use)
 *                (1 x count_k when k may use any model, or G is unknown)
 *   F(node)    = sum_k press_k * f_k / sum_k count_k
 *                                              (kinds without GPUs: f_k = 0)
 *
 * where G is the cluster's GPUs (policy_mix.model_gpus). press is FGD's
 * popularity weight, times how much more load a kind that may use only
 * some models puts on each of their GPUs: free GPU on a scarce model is
 * worth more than elsewhere, and a node whose model such kinds need
 * gains less (F falls less) from a pod that any node could take. With
 * no model_gpus it is FGD's weight.
 *
 * room_k is the GPU that as many pods of kind k as the node's free CPU
 * and memory admit would take. FGD asks only whether one more pod fits:
 * a node with eight free GPUs and CPU for one pod of k is, for k, not
 * fragmented at all, and then wholly so once that CPU is gone. Here the
 * GPU beyond room_k counts, half of it: k's pods are not the only ones
 * to come (CPU-lighter pods may take that GPU), so half is the midpoint
 * between FGD's next-pod view (none) and the view where k alone fills
 * the node (all). A pod then costs on a node in proportion to how much
 * of what the mix still needs there it takes: CPU where the CPU runs
 * out first, GPU where the GPU does, and a CPU-light pod gains where the
 * CPU would strand GPU. On the Alibaba trace (bench/README.md) it took
 * the default and gpushare100 workloads above FGD (95.11 -> 95.38%,
 * 86.68 -> 86.88% at 100% arrived): less GPU is left behind exhausted
 * CPU; a whole share (1 instead of 1/2) gained as much on the default
 * workload but lost 0.6 points on gpushare100, where the CPU binds.
 *
 * The score of a placement is F after it minus F before it, rounded to
 * 0.3 of the pod's own GPU ask (lower is better; it is negative when the
 * pod fills what others could not use), then best fit on GPUs and CPU as
 * tie-breaks (see policy_frag_best). Where FGD's simulator differs: it
 * checks CPU only and for one pod (no room_k), counts all free GPU as
 * fragment for pods without GPUs (a constant that never reorders nodes),
 * weighs kinds by count alone and keeps only the most popular kinds
 * that make up 95% of the pods, rounds the score to an integer of 0..100
 * through a sigmoid and breaks the resulting ties by node name.
 *
 * Plain data and arithmetic over gpus.h: no model, no clock, no memory of
 * its own, no allocation. The planner builds the mix from the requests it
 * sees; the Alibaba benchmark from the trace's arrivals so far.
 */
#ifndef MUSTER_POLICY_FRAG_H
#define MUSTER_POLICY_FRAG_H

#include <stddef.h>
#include <stdint.h>

#include "policy/gpus.h"

/* Kinds of request a mix keeps apart; the rest merge into the nearest. */
#define POLICY_MIX_KINDS 32

/* GPUs of one node the score handles (a bit each in a uint64_t). */
#define POLICY_FRAG_MAX_GPUS 64

/* One kind of request: a pod's CPU and memory and its GPUs, nums GPUs of
 * cores percent each (100: whole GPUs; nums 0: a pod without GPUs), and
 * on each of them gpu_mem MiB or gpu_mem_pct percent of its memory, as
 * kubeapi_vgpu_ask's mem and mem_pct (zero: none asked). */
struct policy_mix_kind {
	int64_t cpu_m; /* millicores */
	int64_t mem;   /* bytes */
	uint32_t nums;
	uint32_t cores;
	uint32_t gpu_mem, gpu_mem_pct;
	uint64_t models; /* GPU models it may use, a bit each; 0: any */
	int64_t first_s; /* when it was first seen (a caller's order; unread here) */
	double count;    /* requests counted by policy_mix_add() */
	double weight;   /* its share of the mix once policy_mix_done() ran */
	double press;    /* its weight in F once policy_mix_done() ran: count x
	                  * the pressure of its models (see model_gpus) */
};

/* The recent mix of requests. Zero-initialise, add, then done; adding
 * more later is fine (done again before scoring). */
struct policy_mix {
	size_t n;
	double total; /* of the counts */
	struct policy_mix_kind kind[POLICY_MIX_KINDS];
	/* Optional, set by the caller before policy_mix_done(): the cluster's
	 * GPUs of each model (the model of bit b has model_gpus[b]). A kind
	 * that may use only some models then weighs (all GPUs / the GPUs of
	 * its models) x its count in F: its demand falls on those GPUs alone.
	 * All zero (or a kind whose models have none): a kind weighs its
	 * count, as in FGD. Read only by policy_mix_done(). */
	double model_gpus[64];
	/* Set by policy_mix_done(): policy_frag_cpu_per_core() of the mix, so
	 * that a placement reads it instead of walking the kinds per node. */
	double cpu_per_core;
	/* Set by policy_mix_done() too, for the score: the kinds that ask
	 * for GPUs (a bit each), and their distinct asks on one GPU with the
	 * kinds that make each (whether a GPU takes a kind is asked once per
	 * ask, not once per kind: kinds often differ in CPU alone). */
	uint32_t gpu_kinds;
	size_t nasks;
	struct kubeapi_vgpu_ask ask[POLICY_MIX_KINDS];
	uint32_t ask_kinds[POLICY_MIX_KINDS];
};

/**
 * Count `count` requests of kind k (its count and weight are ignored) into
 * m. A kind equal to one already there adds to it; when all
 * POLICY_MIX_KINDS are taken, to the nearest one: the same models, nums
 * and cores if any such kind is there (then the nearest CPU, then memory),
 * else the nearest GPU demand (nums x cores). That kind keeps its shape.
 * O(POLICY_MIX_KINDS).
 */
void policy_mix_add(struct policy_mix *m, const struct policy_mix_kind *k, double count);

/** Turn m's counts into weights that sum to 1, and into each kind's press
 *  (frag.h's top; from model_gpus); set m->cpu_per_core. An empty mix stays
 *  empty: every score is then 0 and placement falls back to its
 *  tie-breaks. O(kinds x 64). */
void policy_mix_done(struct policy_mix *m);

/* A node as the score sees it: what is free, and its GPUs. */
struct policy_frag_node {
	int64_t cpu_m, mem;
	const struct policy_gpu *gpu;
	size_t ngpus;
	uint64_t model; /* its GPU model's bit (see models); 0: any kind may use it */
};

/* One pod: its CPU and memory, and one ask per container that asks for
 * vGPUs (none for a pod without GPUs). */
struct policy_frag_ask {
	int64_t cpu_m, mem;
	const struct kubeapi_vgpu_ask *asks;
	size_t nasks;
};

/** The expected fragmentation F of node n under mix m (in GPU percent,
 *  each kind weighed by its press).
 *  O(kinds x distinct GPU states + GPUs^2). */
double policy_frag_of(const struct policy_mix *m, const struct policy_frag_node *n);

/**
 * The best placement of pod a on node n's GPUs: the shares (as
 * policy_vgpu_place() gives them, by Volcano's rules) into out[0..*nout)
 * and its score into *score, lower is better. The caller has checked that
 * the node's CPU, memory and static fit admit a; n's GPUs are not changed.
 *
 * Shares are chosen one at a time, container by container: of the GPUs
 * that take the share (each container's GPUs distinct), the one whose
 * share raises F least, then the one left with the least free (best fit),
 * then the higher index (Volcano's order). GPUs in identical state are
 * scored once. Greedy, as Volcano is: -ENOSPC when it runs out of GPUs,
 * even where another choice for an earlier container would have fit.
 *
 * *score = round(F after - F before, to a step of 0.3 x P, at least 5)
 *        + 1e-8 x the percent the node's GPUs have free after, on average
 *          (best fit relative to the node's size)
 * where P is the GPU percent a asks (per container nums x cores, or x
 * its memory percent when it asks no cores). A pod moves F by about its
 * own size; rises closer than a fraction of that are below what the mix
 * (an estimate) tells apart, and best fit decides them better (on the
 * Alibaba trace, 95.2% allocated against 94.4% with the exact rise and
 * 95.0% with a fixed step of 0.1 GPU). The tie-break stays below 1e-6,
 * never reordering two different rounded rises. Best fit on
 * CPU is the caller's next tie-break (policy_place()'s node score). The
 * score reads the node's free CPU and memory (which kinds they admit,
 * and each kind's room_k), before and after: a caller that remembers it
 * per node state keys on them.
 *
 * 0; -ENOSPC when the GPUs do not take a; -E2BIG past cap shares;
 * -EINVAL past POLICY_FRAG_MAX_GPUS GPUs or POLICY_MIX_KINDS kinds.
 * Cost: O(kinds x distinct GPU states + GPUs^2) to start, then per share
 * O(GPUs^2 + kinds x distinct candidate GPUs); no allocation.
 */
int policy_frag_best(const struct policy_mix *m, const struct policy_frag_node *n,
                     const struct policy_frag_ask *a, struct policy_vgpu_share *out, size_t cap,
                     size_t *nout, double *score);

/** The mix's CPU per GPU core it asks: millicores per percent of a GPU,
 *  over its kinds weighed by count (0 when it asks no GPU). O(kinds). */
double policy_frag_cpu_per_core(const struct policy_mix *m);

/**
 * The tie-break after the score, for nodes whose scores are equal: how far
 * the node would be, after pod a, from keeping its free CPU in the mix's
 * proportion to its free GPU cores, |cpu_left - cpu_per_core x cores
 * left| (cpu_left: the node's free millicores after a). Lower is better:
 * neither then runs out first and strands the other. On the Alibaba
 * trace it took gpushare100, where CPU runs out first, above FGD (86.6
 * -> 86.7% allocated) and moved the others little. The caller compares
 * it after the score (policy_place() for nodes with registered GPUs,
 * bench-alibaba alike); it reads the CPU amounts the score may not.
 * O(GPUs + asks).
 */
double policy_frag_balance(const struct policy_frag_node *n, const struct policy_frag_ask *a,
                           double cpu_per_core, int64_t cpu_left);

#endif /* MUSTER_POLICY_FRAG_H */
