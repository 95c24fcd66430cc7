/*
 * psk.c - pre-shared keys for the layout service's TLS (docs/layout.md
 * "Across hosts"): the file format psktool and nbdkit's tls-psk use, one
 * "IDENTITY:HEXKEY" a line, so one file serves a host's NBD exports and
 * its layouts. The daemon accepts any identity in it; a client presents
 * the first.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pony/layoutd.h"

static int hex_nibble(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
	       c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

void layoutd_psk_free(struct layoutd_psk *k)
{
	for (size_t i = 0; i < k->n; i++) {
		free(k->id[i]);
		if (k->key[i])
			memset(k->key[i], 0, k->len[i]);
		free(k->key[i]);
	}
	free(k->id);
	free(k->key);
	free(k->len);
	memset(k, 0, sizeof(*k));
}

/* One line into k; -EINVAL when it is not IDENTITY:HEXKEY. */
static int psk_line(struct layoutd_psk *k, const char *line)
{
	const char *colon = strchr(line, ':');
	size_t hex = colon ? strcspn(colon + 1, "\r\n") : 0, idlen = colon ? (size_t)(colon - line) : 0;
	uint8_t *key;
	void *grown;

	if (!colon || !idlen || idlen > 255 || !hex || hex % 2 || hex / 2 > 64)
		return -EINVAL;
	key = malloc(hex / 2);
	if (!key)
		return -ENOMEM;
	for (size_t i = 0; i < hex / 2; i++) {
		int hi = hex_nibble(colon[1 + 2 * i]), lo = hex_nibble(colon[2 + 2 * i]);

		if (hi < 0 || lo < 0) {
			free(key);
			return -EINVAL;
		}
		key[i] = (uint8_t)(hi << 4 | lo);
	}
	if (!(grown = realloc(k->id, (k->n + 1) * sizeof(*k->id))) || !(k->id = grown) ||
	    !(grown = realloc(k->key, (k->n + 1) * sizeof(*k->key))) || !(k->key = grown) ||
	    !(grown = realloc(k->len, (k->n + 1) * sizeof(*k->len))) || !(k->len = grown) ||
	    !(k->id[k->n] = strndup(line, idlen))) {
		free(key);
		return -ENOMEM;
	}
	k->key[k->n] = key;
	k->len[k->n++] = hex / 2;
	return 0;
}

int layoutd_psk_load(const char *path, struct layoutd_psk *k, unsigned *ret_line)
{
	FILE *f = fopen(path, "re");
	char line[512];
	unsigned no = 0;
	int r = f ? 0 : -errno;

	memset(k, 0, sizeof(*k));
	while (r >= 0 && fgets(line, sizeof(line), f)) {
		no++;
		if (line[0] == '#' || line[strspn(line, " \t\r\n")] == '\0')
			continue;
		r = psk_line(k, line);
	}
	if (f)
		fclose(f);
	if (r >= 0 && !k->n)
		r = -ENOKEY;
	if (r < 0) {
		layoutd_psk_free(k);
		if (ret_line)
			*ret_line = no;
	}
	return r;
}
