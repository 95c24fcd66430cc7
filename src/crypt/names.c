/*
 * names.c - file names under a policy, as fscrypt encrypts them: the name
 * NUL-padded to the policy's multiple (and to one AES block), encrypted
 * with the directory's key by AES-256-CBC with ciphertext stealing (the
 * CS3 variant Linux's cts(cbc(aes)) is) and an all-zero IV. The same name
 * in the same directory always gives the same ciphertext, so a lookup
 * encrypts the name it is given and finds the entry by it, decrypting
 * nothing. A directory's key is made once into its contexts (struct
 * crypt_names), which its many names share; the bare-key calls make them
 * for the one call. Without the key a directory lists no-key names:
 * base64url of the ciphertext (long ones shortened by a SHA-256), which
 * lookup accepts back, so unlink and rmdir work without the key.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "internal.h"
#include "pony/util.h"

#define NOKEY_HASH 8                    /* dirhash[2]: zeros on ponyfs */
#define NOKEY_MAX (NOKEY_HASH + CRYPT_NOKEY_BYTES + 32)

/* Padded to pad and at least one AES block, never past max. */
static size_t padded_len(size_t len, unsigned pad, size_t max)
{
	size_t n = MAX(len, (size_t)16);

	n = (n + pad - 1) / pad * pad;
	return MIN(n, max);
}

size_t crypt_name_encrypted_len(size_t len, unsigned pad)
{
	return padded_len(len, pad, CRYPT_NAME_MAX);
}

/* A names key's two CS3 CTS-CBC contexts, keyed once. */
struct crypt_names {
	EVP_CIPHER_CTX *enc, *dec;
};

static EVP_CIPHER_CTX *cts_context(const uint8_t key[32], int enc)
{
	static const uint8_t iv[16];
	const EVP_CIPHER *cipher = crypt_evp_cipher(CRYPT_MODE_AES_256_CTS);
	EVP_CIPHER_CTX *ctx = cipher ? EVP_CIPHER_CTX_new() : NULL;
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_CIPHER_PARAM_CTS_MODE, (char *)"CS3", 0),
		OSSL_PARAM_construct_end(),
	};

	if (ctx && EVP_CipherInit_ex2(ctx, cipher, key, iv, enc, params) != 1) {
		EVP_CIPHER_CTX_free(ctx);
		ctx = NULL;
	}
	return ctx;
}

int crypt_names_new(const uint8_t key[32], struct crypt_names **ret)
{
	struct crypt_names *n = calloc(1, sizeof(*n));

	*ret = NULL;
	if (!n)
		return -ENOMEM;
	n->enc = cts_context(key, 1);
	n->dec = cts_context(key, 0);
	if (!n->enc || !n->dec) {
		crypt_names_free(n);
		return -EIO;
	}
	*ret = n;
	return 0;
}

void crypt_names_free(struct crypt_names *n)
{
	if (!n)
		return;
	EVP_CIPHER_CTX_free(n->enc);    /* frees and cleanses the key schedule */
	EVP_CIPHER_CTX_free(n->dec);
	free(n);
}

/* CTS-CBC over len (16..CRYPT_SYMLINK_MAX) bytes, the zero IV set again:
 * each name is encrypted on its own, as if by a fresh context. */
static int cts(EVP_CIPHER_CTX *ctx, const uint8_t *in, size_t len, uint8_t *out)
{
	static const uint8_t iv[16];
	int n = 0, m = 0;

	if (EVP_CipherInit_ex2(ctx, NULL, NULL, iv, -1, NULL) == 1 &&
	    EVP_CipherUpdate(ctx, out, &n, in, (int)len) == 1 &&
	    EVP_CipherFinal_ex(ctx, out + n, &m) == 1 && (size_t)(n + m) == len)
		return 0;
	return -EIO;
}

/* A name (max CRYPT_NAME_MAX) or a symlink's target (CRYPT_SYMLINK_MAX). */
static int text_encrypt(struct crypt_names *names, unsigned pad, const char *text, size_t len,
			size_t max, uint8_t *out, size_t *ret_len)
{
	uint8_t padded[CRYPT_SYMLINK_MAX];
	size_t n;
	int r;

	*ret_len = 0;
	if (!len || len > max || (pad != 4 && pad != 8 && pad != 16 && pad != 32))
		return -EINVAL;
	n = padded_len(len, pad, max);
	memcpy(padded, text, len);
	memset(padded + len, 0, n - len);
	r = cts(names->enc, padded, n, out);
	crypt_wipe(padded, n);
	*ret_len = r < 0 ? 0 : n;
	return r;
}

static int text_decrypt(struct crypt_names *names, const uint8_t *in, size_t len, size_t max,
			char *out, size_t *ret_len)
{
	int r;

	*ret_len = 0;
	if (len < 16 || len > max)
		return -EINVAL;
	r = cts(names->dec, in, len, (uint8_t *)out);
	if (r < 0)
		return r;
	out[len] = '\0';
	*ret_len = strnlen(out, len);
	return *ret_len ? 0 : -EBADMSG;
}

int crypt_names_encrypt(struct crypt_names *names, unsigned pad, const char *name, size_t len,
			uint8_t *out, size_t *ret_len)
{
	return text_encrypt(names, pad, name, len, CRYPT_NAME_MAX, out, ret_len);
}

int crypt_names_decrypt(struct crypt_names *names, const uint8_t *in, size_t len, char *out,
			size_t *ret_len)
{
	int r = text_decrypt(names, in, len, CRYPT_NAME_MAX, out, ret_len);

	/* What no name encrypts to: one with a '/'. */
	if (r >= 0 && memchr(out, '/', *ret_len))
		r = -EBADMSG;
	if (r < 0)
		*ret_len = 0;
	return r;
}

/* The calls with a bare key: its contexts made for the one call. */
#define WITH_NAMES(key, call) ({                                        \
	struct crypt_names *names_;                                     \
	int r_ = crypt_names_new(key, &names_);                         \
	if (r_ >= 0)                                                    \
		r_ = (call);                                            \
	crypt_names_free(names_);                                       \
	r_;                                                             \
})

int crypt_name_encrypt(const uint8_t key[32], unsigned pad, const char *name, size_t len,
		       uint8_t *out, size_t *ret_len)
{
	*ret_len = 0;
	return WITH_NAMES(key, crypt_names_encrypt(names_, pad, name, len, out, ret_len));
}

int crypt_name_decrypt(const uint8_t key[32], const uint8_t *in, size_t len, char *out,
		       size_t *ret_len)
{
	*ret_len = 0;
	return WITH_NAMES(key, crypt_names_decrypt(names_, in, len, out, ret_len));
}

int crypt_symlink_encrypt(const uint8_t key[32], unsigned pad, const char *target, size_t len,
			  uint8_t *out, size_t *ret_len)
{
	*ret_len = 0;
	return WITH_NAMES(key, text_encrypt(names_, pad, target, len, CRYPT_SYMLINK_MAX, out,
					    ret_len));
}

int crypt_symlink_decrypt(const uint8_t key[32], const uint8_t *in, size_t len, char *out,
			  size_t *ret_len)
{
	*ret_len = 0;
	return WITH_NAMES(key, text_decrypt(names_, in, len, CRYPT_SYMLINK_MAX, out, ret_len));
}

static const char b64url[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* RFC 4648 base64url without '=' padding, as fscrypt writes it. */
static size_t base64url_encode(const uint8_t *in, size_t len, char *out)
{
	size_t o = 0;
	uint32_t acc = 0;
	unsigned bits = 0;

	for (size_t i = 0; i < len; i++) {
		acc = acc << 8 | in[i];
		bits += 8;
		while (bits >= 6) {
			bits -= 6;
			out[o++] = b64url[(acc >> bits) & 63];
		}
	}
	if (bits)
		out[o++] = b64url[(acc << (6 - bits)) & 63];
	out[o] = '\0';
	return o;
}

/* Its inverse: the byte count, or -EINVAL (a foreign character, leftover bits set). */
static ssize_t base64url_decode(const char *in, size_t len, uint8_t *out, size_t cap)
{
	size_t o = 0;
	uint32_t acc = 0;
	unsigned bits = 0;

	for (size_t i = 0; i < len; i++) {
		const char *p = memchr(b64url, in[i], 64);

		if (!p || !in[i])
			return -EINVAL;
		acc = acc << 6 | (uint32_t)(p - b64url);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (o == cap)
				return -EINVAL;
			out[o++] = (uint8_t)(acc >> bits);
		}
	}
	if (bits >= 6 || (acc & ((1u << bits) - 1)))
		return -EINVAL;
	return (ssize_t)o;
}

static int sha256(const uint8_t *in, size_t len, uint8_t out[32])
{
	return EVP_Digest(in, len, out, NULL, EVP_sha256(), NULL) == 1 ? 0 : -EIO;
}

int crypt_nokey_name(const uint8_t *ct, size_t len, char *out)
{
	uint8_t raw[NOKEY_MAX] = { 0 };
	size_t n = NOKEY_HASH + len;

	if (len < 16 || len > CRYPT_SYMLINK_MAX)
		return -EINVAL;
	if (len <= CRYPT_NOKEY_BYTES) {
		memcpy(raw + NOKEY_HASH, ct, len);
	} else {
		memcpy(raw + NOKEY_HASH, ct, CRYPT_NOKEY_BYTES);
		if (sha256(ct + CRYPT_NOKEY_BYTES, len - CRYPT_NOKEY_BYTES,
			   raw + NOKEY_HASH + CRYPT_NOKEY_BYTES) < 0)
			return -EIO;
		n = NOKEY_MAX;
	}
	base64url_encode(raw, n, out);
	return 0;
}

int crypt_nokey_name_parse(const char *name, size_t len, uint8_t *ct, size_t *ret_len,
			   bool *ret_digest, uint8_t digest[32])
{
	uint8_t raw[NOKEY_MAX];
	ssize_t n = base64url_decode(name, len, raw, sizeof(raw));

	*ret_len = 0;
	*ret_digest = false;
	if (n < NOKEY_HASH + 16 || (n > NOKEY_HASH + CRYPT_NOKEY_BYTES && n != NOKEY_MAX))
		return -EINVAL;
	if (n == NOKEY_MAX) {
		memcpy(ct, raw + NOKEY_HASH, CRYPT_NOKEY_BYTES);
		memcpy(digest, raw + NOKEY_HASH + CRYPT_NOKEY_BYTES, 32);
		*ret_len = CRYPT_NOKEY_BYTES;
		*ret_digest = true;
	} else {
		memcpy(ct, raw + NOKEY_HASH, (size_t)n - NOKEY_HASH);
		*ret_len = (size_t)n - NOKEY_HASH;
	}
	return 0;
}

bool crypt_nokey_name_matches(const char *name, size_t len, const uint8_t *ct, size_t ct_len)
{
	uint8_t head[CRYPT_NOKEY_BYTES], digest[32], want[32];
	size_t n;
	bool long_form;

	if (crypt_nokey_name_parse(name, len, head, &n, &long_form, digest) < 0)
		return false;
	if (!long_form)
		return n == ct_len && !memcmp(head, ct, n);
	return ct_len > CRYPT_NOKEY_BYTES && !memcmp(head, ct, CRYPT_NOKEY_BYTES) &&
	       sha256(ct + CRYPT_NOKEY_BYTES, ct_len - CRYPT_NOKEY_BYTES, want) == 0 &&
	       !memcmp(digest, want, 32);
}
