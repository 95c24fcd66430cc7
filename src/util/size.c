/*
 * size.c - sizes as people write them ("64K", "1G") and as pony prints them.
 * Units are binary (K = 1024), as in dd, mkfs and mdadm.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "pony/util.h"

int util_parse_size(const char *text, uint64_t *ret_bytes)
{
	static const char units[] = "KMGTPE";
	char *end;
	uint64_t v, mult = 1;

	if (!text || !*text || *text == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(text, &end, 10);
	if (end == text)
		return -EINVAL;
	if (errno == ERANGE)
		return -ERANGE;
	if (*end) {
		const char *u = strchr(units, *end == 'k' ? 'K' : *end);

		if (!u || !*u)
			return -EINVAL;
		for (const char *k = units; k <= u; k++)
			mult *= 1024;
		end++;
		if (!strcmp(end, "iB") || !strcmp(end, "B"))
			end += strlen(end);
		if (*end)
			return -EINVAL;
	}
	if (v > UINT64_MAX / mult)
		return -ERANGE;
	*ret_bytes = v * mult;
	return 0;
}

const char *util_format_size(uint64_t bytes, char *buf, size_t len)
{
	static const char units[] = "BKMGTPE";
	double v = (double)bytes;
	int u = 0;

	while (v >= 1024 && u < 6) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%" PRIu64 "B", bytes);
	else
		snprintf(buf, len, "%.*f%c", v < 10 ? 1 : 0, v, units[u]);
	return buf;
}
