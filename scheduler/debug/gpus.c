/*
 * The GPU map (gpus.h).
 */
#include "scheduler/debug/gpus.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define HOST_LABEL "kubernetes.io/hostname"

static long res_index(const struct snap *sn, const char *name)
{
	for (unsigned r = 0; r < sn->nres; r++)
		if (strcmp(sn->res_name[r], name) == 0)
			return r;
	return -1;
}

/* One registered GPU's letter, and its free cores when shared. */
static char device_cell(const struct snap_gpu *g, int *left)
{
	bool full = g->used_core >= 100 || g->used_mem >= g->memory || g->used_num >= g->split;

	*left = 0;
	if (!g->healthy)
		return 'X';
	if (g->used_num == 0)
		return 'F';
	if (g->used_num == 1 && g->used_core >= 100)
		return 'W';
	*left = full ? 0 : 100 - (int)g->used_core;
	return 'S';
}

/* Whether node n has GPUs to draw: registered ones or whole ones (gi:
 * the index of nvidia.com/gpu, or -1). */
static bool has_gpus(const struct snap_node *n, long gi)
{
	return n->ngpus || (gi >= 0 && n->alloc[gi] > 0);
}

cJSON *debug_gpus_cells(const struct snap *sn, const struct snap_node *n)
{
	long gi = res_index(sn, "nvidia.com/gpu");
	int64_t whole = gi >= 0 ? n->alloc[gi] : 0, used = 0, resv = 0;
	char cells[256];
	size_t at = 0;
	cJSON *o, *left;

	if (!has_gpus(n, gi))
		return NULL;
	o = cJSON_CreateObject();
	left = cJSON_CreateArray();
	if (gi >= 0) {
		used = n->used[gi];
		resv = n->reserved[gi];
	}
	for (uint32_t k = 0; k < n->ngpus && at < sizeof(cells) - 1; k++) {
		int l;

		cells[at++] = device_cell(&n->gpus[k], &l);
		if (cells[at - 1] == 'S')
			cJSON_AddItemToArray(left, cJSON_CreateNumber(l));
	}
	for (int64_t k = 0; k < whole && at < sizeof(cells) - 1; k++)
		cells[at++] = k < used ? 'W' : k < used + resv ? 'R' : 'F';
	cells[at] = '\0';
	cJSON_AddStringToObject(o, "cells", cells);
	cJSON_AddItemToObject(o, "left", left);
	return o;
}

cJSON *debug_gpus_devices(const struct snap_node *n)
{
	cJSON *arr = cJSON_CreateArray();

	for (uint32_t k = 0; k < n->ngpus; k++) {
		const struct snap_gpu *g = &n->gpus[k];
		cJSON *o = cJSON_CreateObject(), *u;

		cJSON_AddNumberToObject(o, "index", k);
		cJSON_AddStringToObject(o, "uuid", g->uuid);
		cJSON_AddBoolToObject(o, "healthy", g->healthy);
		cJSON_AddNumberToObject(o, "memoryMiB", g->memory);
		cJSON_AddNumberToObject(o, "split", g->split);
		u = cJSON_AddObjectToObject(o, "used");
		cJSON_AddNumberToObject(u, "shares", g->used_num);
		cJSON_AddNumberToObject(u, "memoryMiB", g->used_mem);
		cJSON_AddNumberToObject(u, "cores", g->used_core);
		cJSON_AddItemToArray(arr, o);
	}
	return arr;
}

/* The finest topology level that is not the host, or -1. */
static int map_level(const struct snap *sn)
{
	for (unsigned l = sn->nlevels; l-- > 0;)
		if (strcmp(sn->level_name[l], HOST_LABEL) != 0)
			return (int)l;
	return -1;
}

struct entry {
	const char *domain;
	size_t node;
};

static int by_domain(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	int c = strcmp(x->domain, y->domain);

	return c ? c : (x->node > y->node) - (x->node < y->node);
}

int debug_gpus_domains(const struct snap *sn, cJSON *doc)
{
	int l = map_level(sn);
	long gi = res_index(sn, "nvidia.com/gpu");
	struct entry *e = calloc(sn->nnodes + 1, sizeof(*e));
	size_t n = 0;
	cJSON *domains, *dom = NULL, *list = NULL;

	if (!e)
		return -ENOMEM;
	for (size_t k = 0; k < sn->nnodes; k++)
		if (has_gpus(&sn->nodes[k], gi))
			e[n++] = (struct entry){
			    l >= 0 && sn->nodes[k].topo[l] ? sn->nodes[k].topo[l] : "", k};
	qsort(e, n, sizeof(*e), by_domain);
	if (l >= 0)
		cJSON_AddStringToObject(doc, "level", sn->level_name[l]);
	else
		cJSON_AddNullToObject(doc, "level");
	cJSON_AddNumberToObject(doc, "total", (double)n);
	domains = cJSON_AddArrayToObject(doc, "domains");
	for (size_t k = 0; k < n; k++) {
		cJSON *node;

		if (!dom || strcmp(e[k].domain, e[k - 1].domain) != 0) {
			dom = cJSON_CreateObject();
			cJSON_AddStringToObject(dom, "name", e[k].domain);
			list = cJSON_AddArrayToObject(dom, "nodes");
			cJSON_AddItemToArray(domains, dom);
		}
		node = debug_gpus_cells(sn, &sn->nodes[e[k].node]);
		cJSON_AddStringToObject(node, "name", sn->nodes[e[k].node].name);
		cJSON_AddItemToArray(list, node);
	}
	free(e);
	return 0;
}
