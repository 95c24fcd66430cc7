/*
 * values.c - the values probers set, in the exact form libblkid gives them:
 * labels cut at NUL with whitespace trimmed, UTF-16 converted to UTF-8,
 * UUIDs printed in DCE form and omitted when all zero; plus the tag list
 * they are kept in and blkid(8)'s two output encodings (ID_FS_*_ENC's \xNN
 * and ID_FS_LABEL's '_' for whitespace), so scripts see the same strings.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "probe.h"

const char *devdb_tags_get(const struct devdb_tags *tags, const char *name)
{
	for (size_t i = 0; i < tags->n; i++)
		if (!strcmp(tags->v[i].name, name))
			return tags->v[i].value;
	return NULL;
}

int devdb_tags_add(struct devdb_tags *tags, const char *name, const char *value)
{
	size_t nlen, vlen;
	char *n, *v;

	if (tags->n == tags->cap) {
		size_t cap = tags->cap ? tags->cap * 2 : 16;
		struct devdb_tag *t = realloc(tags->v, cap * sizeof(*t));

		if (!t)
			return -ENOMEM;
		tags->v = t;
		tags->cap = cap;
	}
	/* one allocation: name, then value (a probe makes a dozen of these
	 * per device, so a scan makes hundreds of thousands) */
	nlen = strlen(name) + 1;
	vlen = strlen(value) + 1;
	n = malloc(nlen + vlen);
	if (!n)
		return -ENOMEM;
	v = n + nlen;
	memcpy(n, name, nlen);
	memcpy(v, value, vlen);
	tags->v[tags->n++] = (struct devdb_tag){ .name = n, .value = v };
	return 0;
}

void devdb_tags_done(struct devdb_tags *tags)
{
	for (size_t i = 0; i < tags->n; i++)
		free(tags->v[i].name);  /* the value is in the same allocation */
	free(tags->v);
	*tags = (struct devdb_tags){ 0 };
}

int devdb_probe_set(struct devdb_probe *pr, const char *name, const char *fmt, ...)
{
	char buf[256], *s = NULL;
	va_list ap;
	int r;

	/* values are short: format on the stack, allocate only when not */
	va_start(ap, fmt);
	r = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (r < 0)
		return -ENOMEM;
	if ((size_t)r < sizeof(buf))
		return devdb_tags_add(&pr->vals, name, buf);
	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (r < 0)
		return -ENOMEM;
	r = devdb_tags_add(&pr->vals, name, s);
	free(s);
	return r;
}

int devdb_probe_set_u64(struct devdb_probe *pr, const char *name, uint64_t v)
{
	char buf[21], *p = buf + sizeof(buf) - 1;

	*p = '\0';
	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return devdb_tags_add(&pr->vals, name, p);
}

bool devdb_is_zero(const void *data, size_t len)
{
	const uint8_t *p = data;

	for (size_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

/* Sets s (NUL-terminated, may be modified) after trimming; empty sets nothing. */
static int set_trimmed(struct devdb_probe *pr, const char *name, char *s, bool trim_left)
{
	size_t n = strlen(s);

	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	if (trim_left)
		while (*s && isspace((unsigned char)*s))
			s++;
	if (!*s)
		return 0;
	return devdb_tags_add(&pr->vals, name, s);
}

static int set_label(struct devdb_probe *pr, const char *name, const void *data, size_t len,
		     bool trim_left)
{
	char *s = malloc(len + 1);
	int r;

	if (!s)
		return -ENOMEM;
	memcpy(s, data, len);
	s[len] = '\0';
	r = set_trimmed(pr, name, s, trim_left);
	free(s);
	return r;
}

int devdb_probe_set_label(struct devdb_probe *pr, const char *name, const void *data, size_t len)
{
	return set_label(pr, name, data, len, false);
}

int devdb_probe_set_id_label(struct devdb_probe *pr, const char *name, const void *data,
			     size_t len)
{
	return set_label(pr, name, data, len, true);
}

size_t devdb_to_utf8(enum devdb_enc enc, char *dest, size_t len, const uint8_t *src, size_t count)
{
	size_t i, j = 0;

	for (i = 0; i < count; i++) {
		uint32_t c, c2;

		if (enc == DEVDB_ENC_LATIN1) {
			c = src[i];
		} else {
			if (i + 2 > count)
				break;
			c = enc == DEVDB_ENC_UTF16LE ? (uint32_t)(src[i + 1] << 8 | src[i])
						     : (uint32_t)(src[i] << 8 | src[i + 1]);
			i++;
			if (c >= 0xD800 && c <= 0xDBFF && i + 2 < count) {
				c2 = enc == DEVDB_ENC_UTF16LE ? (uint32_t)(src[i + 2] << 8 | src[i + 1])
							      : (uint32_t)(src[i + 1] << 8 | src[i + 2]);
				if (c2 >= 0xDC00 && c2 <= 0xDFFF) {
					c = 0x10000 + ((c - 0xD800) << 10) + (c2 - 0xDC00);
					i += 2;
				}
			}
		}
		if (c == 0)
			break;
		if (c < 0x80) {
			if (j + 1 >= len)
				break;
			dest[j++] = (char)c;
		} else if (c < 0x800) {
			if (j + 2 >= len)
				break;
			dest[j++] = (char)(0xc0 | (c >> 6));
			dest[j++] = (char)(0x80 | (c & 0x3f));
		} else if (c < 0x10000) {
			if (j + 3 >= len)
				break;
			dest[j++] = (char)(0xe0 | (c >> 12));
			dest[j++] = (char)(0x80 | ((c >> 6) & 0x3f));
			dest[j++] = (char)(0x80 | (c & 0x3f));
		} else {
			if (j + 4 >= len)
				break;
			dest[j++] = (char)(0xf0 | (c >> 18));
			dest[j++] = (char)(0x80 | ((c >> 12) & 0x3f));
			dest[j++] = (char)(0x80 | ((c >> 6) & 0x3f));
			dest[j++] = (char)(0x80 | (c & 0x3f));
		}
	}
	if (len)
		dest[j < len ? j : len - 1] = '\0';
	return j;
}

int devdb_probe_set_utf8(struct devdb_probe *pr, const char *name, const void *data, size_t len,
			 enum devdb_enc enc, bool trim_left)
{
	size_t cap = len * 3 + 1;
	char *s = malloc(cap);
	int r;

	if (!s)
		return -ENOMEM;
	devdb_to_utf8(enc, s, cap, data, len);
	r = set_trimmed(pr, name, s, trim_left);
	free(s);
	return r;
}

int devdb_probe_set_uuid(struct devdb_probe *pr, const char *name, const uint8_t u[16])
{
	static const char hex[] = "0123456789abcdef";
	char buf[37], *p = buf;

	if (devdb_is_zero(u, 16))
		return 0;
	/* 8-4-4-4-12, lower case, as libblkid's blkid_unparse_uuid() */
	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			*p++ = '-';
		*p++ = hex[u[i] >> 4];
		*p++ = hex[u[i] & 15];
	}
	*p = '\0';
	return devdb_tags_add(&pr->vals, name, buf);
}

uint32_t devdb_crc32(uint32_t seed, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t crc = seed;

	for (size_t i = 0; i < len; i++) {
		crc ^= p[i];
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xEDB88320u & -(crc & 1));
	}
	return crc;
}

uint32_t devdb_crc32c_skip(uint32_t seed, const uint8_t *buf, size_t len, size_t skip,
			   size_t skiplen)
{
	static const uint8_t zeros[16];
	/* util_crc32c() inverts on the way in and out; undo both for a raw register. */
	uint32_t crc = ~util_crc32c(~seed, buf, skip);

	crc = ~util_crc32c(~crc, zeros, skiplen);
	return ~util_crc32c(~crc, buf + skip + skiplen, len - skip - skiplen);
}

/* ---- blkid(8) output encodings ----------------------------------------- */

static int utf8_seq_len(const unsigned char *s)
{
	unsigned char c = s[0];
	int len;
	uint32_t u;

	if (c < 0x80)
		return 1;
	if ((c & 0xe0) == 0xc0)
		len = 2, u = c & 0x1f;
	else if ((c & 0xf0) == 0xe0)
		len = 3, u = c & 0x0f;
	else if ((c & 0xf8) == 0xf0)
		len = 4, u = c & 0x07;
	else
		return -1;
	for (int i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return -1;
		u = u << 6 | (s[i] & 0x3f);
	}
	/* overlong forms, surrogates and non-characters are not valid */
	if ((len == 2 && u < 0x80) || (len == 3 && u < 0x800) || (len == 4 && u < 0x10000))
		return -1;
	if (u > 0x10ffff || (u & 0xfffff800) == 0xd800 || (u > 0xfdcf && u < 0xfdf0) ||
	    (u & 0xffff) == 0xffff)
		return -1;
	return len;
}

int devdb_encode_string(const char *str, char *out, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t j = 0;

	for (size_t i = 0; s[i]; i++) {
		int n = utf8_seq_len(s + i);

		if (n > 1) {
			if (j + (size_t)n >= len)
				return -ENOSPC;
			memcpy(out + j, s + i, (size_t)n);
			j += (size_t)n;
			i += (size_t)n - 1;
		} else if (!((s[i] < 0x80 && isalnum(s[i])) || strchr("#+-.:=@_", s[i]))) {
			if (j + 4 >= len)
				return -ENOSPC;
			snprintf(out + j, 5, "\\x%02x", s[i]);
			j += 4;
		} else {
			if (j + 1 >= len)
				return -ENOSPC;
			out[j++] = (char)s[i];
		}
	}
	out[j] = '\0';
	return 0;
}

int devdb_safe_string(const char *str, char *out, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t j = 0;
	bool intext = false;
	int nsp = 0;

	if (!len)
		return -ENOSPC;
	/* squeeze runs of whitespace, drop it at both ends */
	for (size_t i = 0; s[i] && j < len - 1; i++) {
		if (isspace(s[i])) {
			nsp++;
		} else {
			nsp = 0;
			intext = true;
		}
		if (nsp > 1 || (nsp && !intext))
			continue;
		out[j++] = (char)s[i];
	}
	if (nsp && j)
		j--;
	out[j] = '\0';
	for (size_t i = 0; out[i];) {
		unsigned char c = (unsigned char)out[i];
		int n;

		if (c > 0x20 && c <= 0x7e)
			i++;
		else if (isspace(c))
			out[i++] = '_';
		else if ((n = utf8_seq_len((unsigned char *)out + i)) >= 1)
			i += (size_t)n;
		else
			out[i++] = '_';
	}
	return 0;
}
