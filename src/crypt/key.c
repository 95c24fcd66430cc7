/*
 * key.c - master keys and the keys derived from them, as fscrypt (policy
 * v2) derives them: HKDF-SHA512, extracted once from the raw key with the
 * all-zero salt, then expanded with the info "fscrypt\0", a context byte
 * and the context's data. The identifier is context 1 (no data), an
 * inode's key context 2 with its 16-byte nonce. Deriving as Linux does is
 * what lets one key open the same files on ext4 and on ponyfs, and lets
 * ext4 serve as the oracle in tests/crypt. A passphrase becomes a master
 * key through scrypt, with a salt the filesystem keeps.
 */
#include <errno.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/kdf.h>
#include <openssl/params.h>

#include "internal.h"

enum {
	HKDF_CONTEXT_KEY_IDENTIFIER = 1,
	HKDF_CONTEXT_PER_FILE_ENC_KEY = 2,
};

/* One HKDF step (extract or expand) with SHA-512. */
static int hkdf(int mode, const uint8_t *key, size_t key_len, const uint8_t *salt,
		size_t salt_len, const uint8_t *info, size_t info_len, uint8_t *out,
		size_t out_len)
{
	EVP_KDF *kdf = crypt_evp_hkdf();
	EVP_KDF_CTX *ctx = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
	OSSL_PARAM params[6], *p = params;
	int r = -EIO;

	*p++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)"SHA512", 0);
	*p++ = OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &mode);
	*p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)key, key_len);
	if (salt)
		*p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)salt, salt_len);
	if (info)
		*p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, (void *)info, info_len);
	*p = OSSL_PARAM_construct_end();
	if (ctx && EVP_KDF_derive(ctx, out, out_len, params) == 1)
		r = 0;
	EVP_KDF_CTX_free(ctx);
	return r;
}

/*
 * HKDF-Expand (RFC 5869) with fscrypt's info: "fscrypt\0", the context,
 * its data. Every key pony derives fits one SHA-512 output, so it is
 * T(1) = HMAC(prk, info | 0x01), cut to out_len. Computed with the HMAC
 * keyed once with the prk at crypt_master_init() and copied per call, not
 * with EVP_KDF: the KDF's context, its parameters and its own keying of
 * the HMAC cost 4-5 us per new file, twice the HMAC itself (test_crypt and
 * the ext4 oracle check the bytes are still Linux's).
 */
static int expand(const struct crypt_master *m, uint8_t context, const uint8_t *data,
		  size_t data_len, uint8_t *out, size_t out_len)
{
	static const uint8_t one = 1;
	uint8_t info[9 + 64], t[64];
	EVP_MAC_CTX *ctx;
	size_t tlen = 0;
	int r;

	if (data_len > sizeof(info) - 9 || out_len > sizeof(t))
		return -EINVAL;
	memcpy(info, "fscrypt\0", 8);
	info[8] = context;
	if (data_len)
		memcpy(info + 9, data, data_len);
	ctx = m->hmac ? EVP_MAC_CTX_dup(m->hmac) : NULL;
	r = ctx && EVP_MAC_update(ctx, info, 9 + data_len) == 1 &&
	    EVP_MAC_update(ctx, &one, 1) == 1 && EVP_MAC_final(ctx, t, &tlen, sizeof(t)) == 1 &&
	    tlen == sizeof(t) ? 0 : -EIO;
	EVP_MAC_CTX_free(ctx);
	if (r >= 0)
		memcpy(out, t, out_len);
	OPENSSL_cleanse(t, sizeof(t));
	return r;
}

/* The HMAC-SHA512 every expand() starts from, keyed with m->prk. */
static int hmac_keyed(struct crypt_master *m)
{
	EVP_MAC *mac = crypt_evp_hmac();
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA512", 0),
		OSSL_PARAM_construct_end(),
	};

	m->hmac = mac ? EVP_MAC_CTX_new(mac) : NULL;
	if (!m->hmac)
		return -EIO;
	return EVP_MAC_init(m->hmac, m->prk, sizeof(m->prk), params) == 1 ? 0 : -EIO;
}

int crypt_master_init(struct crypt_master *m, const uint8_t *key, size_t len)
{
	static const uint8_t zero_salt[64];
	int r;

	memset(m, 0, sizeof(*m));
	if (len != CRYPT_MASTER_KEY_SIZE)
		return -EINVAL;
	r = hkdf(EVP_KDF_HKDF_MODE_EXTRACT_ONLY, key, len, zero_salt, sizeof(zero_salt), NULL, 0,
		 m->prk, sizeof(m->prk));
	if (r >= 0)
		r = hmac_keyed(m);
	if (r >= 0)
		r = expand(m, HKDF_CONTEXT_KEY_IDENTIFIER, NULL, 0, m->id, sizeof(m->id));
	if (r < 0)
		crypt_master_wipe(m);
	return r;
}

void crypt_master_wipe(struct crypt_master *m)
{
	EVP_MAC_CTX_free(m->hmac);      /* cleanses the keyed HMAC's state */
	OPENSSL_cleanse(m, sizeof(*m));
}

size_t crypt_mode_key_size(enum crypt_mode mode)
{
	switch (mode) {
	case CRYPT_MODE_AES_256_XTS:
		return 64;
	case CRYPT_MODE_AES_256_CTS:
	case CRYPT_MODE_AES_256_GCM:
		return 32;
	}
	return 0;
}

int crypt_file_key(const struct crypt_master *m, const uint8_t nonce[CRYPT_NONCE_SIZE],
		   enum crypt_mode mode, uint8_t *key, size_t key_len)
{
	if (!key_len || key_len != crypt_mode_key_size(mode))
		return -EINVAL;
	return expand(m, HKDF_CONTEXT_PER_FILE_ENC_KEY, nonce, CRYPT_NONCE_SIZE, key, key_len);
}

int crypt_scrypt(const char *pass, size_t len, const uint8_t *salt, size_t salt_len,
		 const struct crypt_scrypt_cost *cost, uint8_t *out, size_t out_len)
{
	EVP_KDF *kdf = EVP_KDF_fetch(NULL, "SCRYPT", NULL);
	EVP_KDF_CTX *ctx = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
	uint64_t n = cost->n, maxmem = 256 * (uint64_t)cost->r * (cost->n + cost->p) + (1u << 20);
	uint32_t r = cost->r, p = cost->p;
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_PASSWORD, (void *)pass, len),
		OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)salt, salt_len),
		OSSL_PARAM_construct_uint64(OSSL_KDF_PARAM_SCRYPT_N, &n),
		OSSL_PARAM_construct_uint32(OSSL_KDF_PARAM_SCRYPT_R, &r),
		OSSL_PARAM_construct_uint32(OSSL_KDF_PARAM_SCRYPT_P, &p),
		OSSL_PARAM_construct_uint64(OSSL_KDF_PARAM_SCRYPT_MAXMEM, &maxmem),
		OSSL_PARAM_construct_end(),
	};
	int ret = -EIO;

	/* N a power of two over 1: what scrypt is defined for. */
	if (!len || n < 2 || (n & (n - 1)) || !r || !p)
		ret = -EINVAL;
	else if (ctx && EVP_KDF_derive(ctx, out, out_len, params) == 1)
		ret = 0;
	EVP_KDF_CTX_free(ctx);
	EVP_KDF_free(kdf);
	return ret;
}
