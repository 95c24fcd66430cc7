/*
 * contents.c - a file's blocks encrypted between the cache and the disk.
 * AES-256-XTS as fscrypt does it: one 4 KiB data unit per block, the tweak
 * the block's number in the file (little-endian, zero-padded to 16 bytes),
 * so the same plaintext at two offsets differs and nothing grows. Or
 * AES-256-GCM, pony's own mode: a random 96-bit nonce per write and a
 * 16-byte tag, both kept by the caller beside the block's checksum, with
 * the block number as associated data, so a block changed or moved on the
 * disk fails to open instead of decrypting to garbage. Each context holds
 * the key schedule for one direction: OpenSSL builds AES's decryption
 * schedule apart from its encryption one. The decrypting one is made at
 * the first decryption, not with the cipher: a file written and never
 * read back (each file of an untar) never needs it. Until then the key
 * waits in the cipher's own memory, wiped once used.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "internal.h"
#include "pony/util.h"

struct crypt_contents {
	enum crypt_mode mode;
	EVP_CIPHER_CTX *enc, *dec;      /* dec NULL: not made yet, key holds the key */
	uint8_t key[64];
	struct crypt_random nonces;     /* GCM's */
};

static EVP_CIPHER_CTX *context_new(const EVP_CIPHER *cipher, const uint8_t *key, int enc)
{
	EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();

	if (ctx && EVP_CipherInit_ex(ctx, cipher, NULL, key, NULL, enc) != 1) {
		EVP_CIPHER_CTX_free(ctx);
		ctx = NULL;
	}
	return ctx;
}

int crypt_contents_new(enum crypt_mode mode, const uint8_t *key, size_t key_len,
		       struct crypt_contents **ret)
{
	const EVP_CIPHER *cipher = mode == CRYPT_MODE_AES_256_CTS ? NULL : crypt_evp_cipher(mode);
	struct crypt_contents *c;

	*ret = NULL;
	if (!cipher || key_len != crypt_mode_key_size(mode))
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->mode = mode;
	c->enc = context_new(cipher, key, 1);
	if (!c->enc) {
		crypt_contents_free(c);
		return -EIO;    /* e.g. XTS refuses a key whose halves are equal */
	}
	memcpy(c->key, key, key_len);
	*ret = c;
	return 0;
}

/* The decrypting context, made from the key kept for it. */
static EVP_CIPHER_CTX *decrypter(struct crypt_contents *c)
{
	if (!c->dec) {
		c->dec = context_new(crypt_evp_cipher(c->mode), c->key, 0);
		if (c->dec)
			crypt_wipe(c->key, sizeof(c->key));
	}
	return c->dec;
}

int crypt_contents_clone(struct crypt_contents *c, struct crypt_contents **ret)
{
	struct crypt_contents *n = calloc(1, sizeof(*n));

	*ret = NULL;
	if (!n)
		return -ENOMEM;
	n->mode = c->mode;
	n->enc = EVP_CIPHER_CTX_new();
	n->dec = EVP_CIPHER_CTX_new();
	/* A copy of the key schedules: no fetch, no key expansion. A clone
	 * serves a reader, so c's decrypting context is made for it once. */
	if (!n->enc || !n->dec || !decrypter(c) || EVP_CIPHER_CTX_copy(n->enc, c->enc) != 1 ||
	    EVP_CIPHER_CTX_copy(n->dec, c->dec) != 1) {
		crypt_contents_free(n);
		return -EIO;
	}
	*ret = n;
	return 0;
}

void crypt_contents_free(struct crypt_contents *c)
{
	if (!c)
		return;
	EVP_CIPHER_CTX_free(c->enc);    /* frees and cleanses the key schedule */
	EVP_CIPHER_CTX_free(c->dec);
	crypt_wipe(c, sizeof(*c));
	free(c);
}

static int xts(struct crypt_contents *c, EVP_CIPHER_CTX *ctx, uint64_t lblk, const uint8_t *in,
	       uint8_t *out)
{
	uint8_t tweak[16] = { 0 };
	le64 index = cpu_to_le64(lblk);
	int n;

	if (c->mode != CRYPT_MODE_AES_256_XTS)
		return -EINVAL;
	memcpy(tweak, &index, sizeof(index));
	if (!ctx || EVP_CipherInit_ex(ctx, NULL, NULL, NULL, tweak, -1) != 1 ||
	    EVP_CipherUpdate(ctx, out, &n, in, CRYPT_BLOCK_SIZE) != 1 || n != CRYPT_BLOCK_SIZE)
		return -EIO;
	return 0;
}

int crypt_xts_encrypt(struct crypt_contents *c, uint64_t lblk, const uint8_t *in, uint8_t *out)
{
	return xts(c, c->enc, lblk, in, out);
}

int crypt_xts_decrypt(struct crypt_contents *c, uint64_t lblk, const uint8_t *in, uint8_t *out)
{
	return xts(c, c->mode == CRYPT_MODE_AES_256_XTS ? decrypter(c) : NULL, lblk, in, out);
}

/* GCM over one block: the IV set, the block number as associated data. */
static int gcm_start(EVP_CIPHER_CTX *ctx, uint64_t lblk, const uint8_t *nonce)
{
	le64 aad = cpu_to_le64(lblk);
	int n;

	if (EVP_CipherInit_ex(ctx, NULL, NULL, NULL, nonce, -1) != 1 ||
	    EVP_CipherUpdate(ctx, NULL, &n, (const uint8_t *)&aad, sizeof(aad)) != 1)
		return -EIO;
	return 0;
}

int crypt_gcm_seal(struct crypt_contents *c, uint64_t lblk, const uint8_t *in, uint8_t *out,
		   uint8_t nonce[CRYPT_GCM_NONCE_SIZE], uint8_t tag[CRYPT_GCM_TAG_SIZE])
{
	int n, m;

	if (c->mode != CRYPT_MODE_AES_256_GCM)
		return -EINVAL;
	/* Random, never a counter: a counter would repeat after a crash
	 * rolled the filesystem back, and a repeated nonce breaks GCM. Drawn
	 * a pool at a time: one DRBG call per block cost as much as the
	 * cipher (bench/crypt). */
	if (crypt_random_draw(&c->nonces, nonce, CRYPT_GCM_NONCE_SIZE) < 0)
		return -EIO;
	if (gcm_start(c->enc, lblk, nonce) < 0 ||
	    EVP_EncryptUpdate(c->enc, out, &n, in, CRYPT_BLOCK_SIZE) != 1 ||
	    EVP_EncryptFinal_ex(c->enc, out + n, &m) != 1 || n + m != CRYPT_BLOCK_SIZE ||
	    EVP_CIPHER_CTX_ctrl(c->enc, EVP_CTRL_GCM_GET_TAG, CRYPT_GCM_TAG_SIZE, tag) != 1)
		return -EIO;
	return 0;
}

int crypt_gcm_open(struct crypt_contents *c, uint64_t lblk, const uint8_t *in, uint8_t *out,
		   const uint8_t nonce[CRYPT_GCM_NONCE_SIZE], const uint8_t tag[CRYPT_GCM_TAG_SIZE])
{
	uint8_t t[CRYPT_GCM_TAG_SIZE];
	int n, m;

	if (c->mode != CRYPT_MODE_AES_256_GCM)
		return -EINVAL;
	memcpy(t, tag, sizeof(t));
	if (!decrypter(c) || gcm_start(c->dec, lblk, nonce) < 0 ||
	    EVP_DecryptUpdate(c->dec, out, &n, in, CRYPT_BLOCK_SIZE) != 1 ||
	    EVP_CIPHER_CTX_ctrl(c->dec, EVP_CTRL_GCM_SET_TAG, sizeof(t), t) != 1)
		return -EIO;
	if (EVP_DecryptFinal_ex(c->dec, out + n, &m) != 1) {
		/* Nothing of a block that did not verify is handed out. */
		crypt_wipe(out, CRYPT_BLOCK_SIZE);
		return -EBADMSG;
	}
	return 0;
}
