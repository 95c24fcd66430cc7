/*
 * internal.h - what the files of src/crypt share: OpenSSL's cipher of
 * each mode, its HKDF and HMAC, fetched once (cipher.c).
 */
#ifndef CRYPT_INTERNAL_H
#define CRYPT_INTERNAL_H

#include <openssl/evp.h>
#include <openssl/kdf.h>

#include "pony/crypt.h"

/* NULL for a mode pony has no cipher for (or OpenSSL lacks). */
const EVP_CIPHER *crypt_evp_cipher(enum crypt_mode mode);
/* HKDF (key.c's extraction) and HMAC (its expansions); NULL if OpenSSL
 * lacks it. Not to be freed. */
EVP_KDF *crypt_evp_hkdf(void);
EVP_MAC *crypt_evp_hmac(void);

#endif
