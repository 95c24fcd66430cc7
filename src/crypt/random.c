/*
 * random.c - random bytes for nonces, drawn from OpenSSL's DRBG a pool at
 * a time. One RAND_bytes() call costs 2-4 us here whatever its length
 * (the DRBG's locking, its fork and reseed checks), as much as the cipher
 * of a 4 KiB block: GCM's per-block nonces and every new encrypted
 * inode's nonce took one each. The pool is its owner's, never shared
 * between threads at once, and each byte handed out is wiped from it, so
 * none is handed out twice.
 */
#include <errno.h>
#include <string.h>

#include <openssl/rand.h>

#include "pony/crypt.h"

int crypt_random_draw(struct crypt_random *r, void *out, size_t len)
{
	if (len > sizeof(r->pool))
		return -EINVAL;
	if (r->left < len) {
		if (RAND_bytes(r->pool, sizeof(r->pool)) != 1)
			return -EIO;
		r->left = sizeof(r->pool);
	}
	r->left -= len;
	memcpy(out, r->pool + r->left, len);
	crypt_wipe(r->pool + r->left, len);
	return 0;
}

void crypt_random_done(struct crypt_random *r)
{
	crypt_wipe(r, sizeof(*r));
}
