/*
 * random.c - random bytes for nonces, drawn from OpenSSL's DRBG into a
 * pool, a refill twice the size of the last up to the whole pool. One
 * RAND_bytes() call costs 2-4 us here (the DRBG's locking, its fork and
 * reseed checks), as much as the cipher of a 4 KiB block: GCM's per-block
 * nonces and every new encrypted inode's nonce took one each. The pool is
 * its owner's, never shared between threads at once, and each byte handed
 * out is wiped from it, so none is handed out twice.
 */
#include <errno.h>
#include <string.h>

#include <openssl/rand.h>

#include "pony/crypt.h"
#include "pony/util.h"

int crypt_random_draw(struct crypt_random *r, void *out, size_t len)
{
	if (len > sizeof(r->pool))
		return -EINVAL;
	if (r->left < len) {
		/* Each refill twice the last, from a few nonces' worth: a new
		 * file's GCM cipher that seals one block drew 3 KiB at its
		 * first seal (the DRBG's time grows with the bytes), a large
		 * file soon draws whole pools. */
		size_t n = MIN(MAX(r->fill * 2, MAX(len, (size_t)CRYPT_RANDOM_FIRST)), sizeof(r->pool));

		if (RAND_bytes(r->pool, (int)n) != 1)
			return -EIO;
		r->fill = r->left = (unsigned)n;
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
