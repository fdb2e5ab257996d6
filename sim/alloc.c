/*
 * The FGD paper's allocation ratio (sim.h), computed as its simulator
 * logs it and its scripts average it (hkust-adsl/kubernetes-scheduler-
 * simulator: pkg/simulator/analysis.go, scripts/analysis.py,
 * experiments/analysis/merge_alloc_discrete.py), so that a value here is
 * the one their CSV would hold for the same placements. One fact for the
 * two that report it: `muster simulate --alibaba` and bench/alibaba_pack.
 *
 * Cost: 32 bytes an arrival; a column is two passes over the samples.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"

/* One sample per arrival, a line "[Alloc]" of the simulator's log: its
 * arrival bucket and its ratios (%), each rounded to 0.01 as the script's
 * Series.apply(round) leaves it. */
struct sim_alloc {
	long *pct;
	double *used, *held;
	double *scratch; /* one bucket's values, for the sum */
	size_t n, max;
};

struct sim_alloc *sim_alloc_new(size_t max)
{
	struct sim_alloc *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->max = max;
	a->pct = calloc(max + 1, sizeof(*a->pct));
	a->used = calloc(max + 1, sizeof(*a->used));
	a->held = calloc(max + 1, sizeof(*a->held));
	a->scratch = calloc(max + 1, sizeof(*a->scratch));
	if (!a->pct || !a->used || !a->held || !a->scratch) {
		sim_alloc_free(a);
		return NULL;
	}
	return a;
}

void sim_alloc_free(struct sim_alloc *a)
{
	if (!a)
		return;
	free(a->pct);
	free(a->used);
	free(a->held);
	free(a->scratch);
	free(a);
}

/* Python's round() on a ratio in percent: nearest, ties to even. */
static long round_pct(long arrived_milli, long capacity_gpus)
{
	long num = arrived_milli, den = capacity_gpus * 10; /* percent = milli / (gpus x 10) */
	long q = num / den, rem = num % den;

	if (2 * rem > den || (2 * rem == den && (q & 1)))
		q++;
	return q;
}

/* Python's round(x, 2) on a float: its exact binary value to the nearest
 * 0.01, ties to even, which is what printf does. */
static double round2(double x)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "%.2f", x);
	return strtod(buf, NULL);
}

/* numpy's round(x, 2), which Python's round() does on the numpy.float64
 * that pandas' mean returns: x * 100 to the nearest integer, ties to even,
 * / 100. It differs from round2() (63.945000000000000284: 63.94 here).
 * 0 <= x < 2^45; no libm, which the build does not link. */
static double np_round2(double x)
{
	double y = x * 100, t = (double)(int64_t)y;

	if (y - t > 0.5 || (y - t == 0.5 && ((int64_t)t & 1)))
		t += 1;
	return t / 100;
}

/* numpy's float64 sum (pandas' mean divides it by the count): sequential
 * below 8 values, 8 interleaved partial sums up to 128, halves above. Its
 * grouping decides the last digit when a mean falls on a .xx5. */
static double pairwise_sum(const double *a, size_t n)
{
	double r[8], s = 0;
	size_t i = 0, h;

	if (n > 128) {
		h = n / 2 - n / 2 % 8;
		return pairwise_sum(a, h) + pairwise_sum(a + h, n - h);
	}
	if (n >= 8) {
		memcpy(r, a, sizeof(r));
		for (i = 8; i < n - n % 8; i += 8)
			for (int j = 0; j < 8; j++)
				r[j] += a[i + j];
		s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
	}
	for (; i < n; i++)
		s += a[i];
	return s;
}

int sim_alloc_sample(struct sim_alloc *a, long arrived_milli, long used_milli, long held_gpus,
                     long gpus)
{
	if (a->n == a->max || gpus <= 0)
		return a->n == a->max ? -E2BIG : -EINVAL;
	a->pct[a->n] = round_pct(arrived_milli, gpus);
	/* The script's used / total_gpus / 10, in that order: the same double. */
	a->used[a->n] = round2((double)used_milli / (double)gpus / 10);
	a->held[a->n] = round2(100.0 * (double)held_gpus / (double)gpus);
	a->n++;
	return 0;
}

double sim_alloc_at(struct sim_alloc *a, bool held, long pct)
{
	const double *v = held ? a->held : a->used;
	size_t n = 0;

	for (size_t k = 0; k < a->n; k++)
		if (a->pct[k] == pct)
			a->scratch[n++] = v[k];
	if (n == 0)
		for (size_t k = 0; k < a->n; k++)
			if (a->pct[k] >= pct - 1 && a->pct[k] <= pct + 1)
				a->scratch[n++] = v[k];
	return n ? np_round2(pairwise_sum(a->scratch, n) / (double)n) : -1;
}
