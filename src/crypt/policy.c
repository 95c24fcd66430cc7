/*
 * policy.c - an encryption policy: which key, which ciphers, how names are
 * padded. Its bytes are Linux's struct fscrypt_policy_v2 (24 bytes), so
 * the same bytes travel through FS_IOC_SET_ENCRYPTION_POLICY, are kept in
 * ponyfs's metadata, and come back through FS_IOC_GET_ENCRYPTION_POLICY_EX.
 * Decoding is where a user's policy is checked: anything pony cannot honour
 * exactly is EINVAL, as Linux refuses it, never quietly changed.
 */
#include <errno.h>
#include <string.h>

#include "pony/crypt.h"

#define POLICY_V2 2
#define FLAGS_PAD_MASK 0x03u

int crypt_policy_decode(const uint8_t *buf, size_t len, struct crypt_policy *ret)
{
	static const uint8_t zero[4];

	memset(ret, 0, sizeof(*ret));
	if (len != CRYPT_POLICY_SIZE || buf[0] != POLICY_V2)
		return -EINVAL;
	if ((buf[1] != CRYPT_MODE_AES_256_XTS && buf[1] != CRYPT_MODE_AES_256_GCM) ||
	    buf[2] != CRYPT_MODE_AES_256_CTS || (buf[3] & ~FLAGS_PAD_MASK) || memcmp(buf + 4, zero, 4))
		return -EINVAL;
	ret->contents_mode = (enum crypt_mode)buf[1];
	ret->filenames_mode = (enum crypt_mode)buf[2];
	ret->flags = buf[3];
	memcpy(ret->key_id, buf + 8, CRYPT_KEY_ID_SIZE);
	return 0;
}

void crypt_policy_encode(const struct crypt_policy *p, uint8_t out[CRYPT_POLICY_SIZE])
{
	memset(out, 0, CRYPT_POLICY_SIZE);
	out[0] = POLICY_V2;
	out[1] = (uint8_t)p->contents_mode;
	out[2] = (uint8_t)p->filenames_mode;
	out[3] = p->flags;
	memcpy(out + 8, p->key_id, CRYPT_KEY_ID_SIZE);
}

unsigned crypt_policy_pad(const struct crypt_policy *p)
{
	return 4u << (p->flags & FLAGS_PAD_MASK);
}

bool crypt_policy_equal(const struct crypt_policy *a, const struct crypt_policy *b)
{
	return a->contents_mode == b->contents_mode && a->filenames_mode == b->filenames_mode &&
	       a->flags == b->flags && !memcmp(a->key_id, b->key_id, CRYPT_KEY_ID_SIZE);
}

static const struct { const char *name; enum crypt_mode mode; } modes[] = {
	{ "aes-256-xts", CRYPT_MODE_AES_256_XTS },
	{ "aes-256-gcm", CRYPT_MODE_AES_256_GCM },
	{ "aes-256-cts", CRYPT_MODE_AES_256_CTS },
};

int crypt_mode_from_name(const char *name, enum crypt_mode *ret)
{
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		if (!strcmp(name, modes[i].name)) {
			*ret = modes[i].mode;
			return 0;
		}
	}
	return -EINVAL;
}

const char *crypt_mode_name(enum crypt_mode mode)
{
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (modes[i].mode == mode)
			return modes[i].name;
	return "unknown";
}
