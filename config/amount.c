/*
 * Amounts written back for people (config.h): the inverse of the
 * quantities a queue file and the API server give, in the shortest exact
 * form ("16", "500m", "64Gi").
 */
#include <stdio.h>
#include <string.h>

#include "config/config.h"

void config_format_amount(char *buf, size_t len, const char *res, int64_t v)
{
	static const char *const bin[] = {"Ki", "Mi", "Gi", "Ti", "Pi"};
	int u = -1;

	if (v == CONFIG_UNLIMITED) {
		snprintf(buf, len, "unlimited");
	} else if (strcmp(res, "cpu") == 0) {
		if (v % 1000 == 0)
			snprintf(buf, len, "%lld", (long long)(v / 1000));
		else
			snprintf(buf, len, "%lldm", (long long)v);
	} else if (strcmp(res, "memory") == 0 || strcmp(res, "ephemeral-storage") == 0) {
		while (u < 4 && v != 0 && v % (1ll << (10 * (u + 2))) == 0)
			u++;
		if (u < 0)
			snprintf(buf, len, "%lld", (long long)v);
		else
			snprintf(buf, len, "%lld%s", (long long)(v >> (10 * (u + 1))), bin[u]);
	} else {
		snprintf(buf, len, "%lld", (long long)v);
	}
}
