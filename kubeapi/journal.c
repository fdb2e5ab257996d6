/*
 * The held cache's journal (journal.h). A record's text is the object
 * printed back from its parse: printing costs about what parsing did, and
 * keeps a few hundred bytes per object where a copied tree keeps several
 * times its text in nodes.
 */
#include "kubeapi/journal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int grow(struct kubeapi__journal *j)
{
	size_t cap = j->cap ? j->cap * 2 : 256;
	struct kubeapi__journal_rec *v;

	if (j->n < j->cap)
		return 0;
	if (!(v = realloc(j->v, cap * sizeof(*v))))
		return -ENOMEM;
	j->v = v;
	j->cap = cap;
	return 0;
}

int kubeapi__journal_add(struct kubeapi__journal *j, unsigned store, enum kubeapi__journal_op op,
                         const cJSON *obj)
{
	char *text = NULL;
	size_t len = 0;

	if (obj) {
		if (!(text = cJSON_PrintUnformatted(obj)))
			return -ENOMEM;
		len = strlen(text);
	}
	if (j->bytes + len > j->max_bytes) {
		cJSON_free(text);
		return -EMSGSIZE;
	}
	if (grow(j) < 0) {
		cJSON_free(text);
		return -ENOMEM;
	}
	j->v[j->n++] = (struct kubeapi__journal_rec){(uint8_t)store, (uint8_t)op, text, len};
	j->bytes += len;
	return 0;
}

void kubeapi__journal_done(struct kubeapi__journal *j, size_t k)
{
	j->bytes -= j->v[k].len;
	j->v[k].len = 0;
	cJSON_free(j->v[k].text);
	j->v[k].text = NULL;
}

void kubeapi__journal_clear(struct kubeapi__journal *j)
{
	for (size_t k = 0; k < j->n; k++)
		cJSON_free(j->v[k].text);
	free(j->v);
	j->v = NULL;
	j->n = j->cap = j->bytes = 0;
}
