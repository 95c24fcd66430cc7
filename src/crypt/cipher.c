/*
 * cipher.c - OpenSSL's ciphers for the three modes, and the HKDF that
 * extracts each master key and the HMAC that derives each per-file key,
 * fetched once per process. An implicit fetch (EVP_aes_256_xts() handed to
 * EVP_CipherInit_ex) or an EVP_CIPHER_fetch looks the algorithm up by name
 * in the provider tables under a global lock, which cost more than
 * encrypting a name and most of a new file's context; an explicitly
 * fetched cipher skips it. The ciphers live as long as the process.
 */
#include <pthread.h>

#include "internal.h"

static EVP_CIPHER *xts, *gcm, *cts;
static EVP_KDF *hkdf;
static EVP_MAC *hmac;
static pthread_once_t fetched = PTHREAD_ONCE_INIT;

static void fetch(void)
{
	xts = EVP_CIPHER_fetch(NULL, "AES-256-XTS", NULL);
	gcm = EVP_CIPHER_fetch(NULL, "AES-256-GCM", NULL);
	cts = EVP_CIPHER_fetch(NULL, "AES-256-CBC-CTS", NULL);
	hkdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
	hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
}

/* Each new encrypted file fetched it again for its key (key.c). */
EVP_KDF *crypt_evp_hkdf(void)
{
	pthread_once(&fetched, fetch);
	return hkdf;
}

/* Each derivation of a per-file key copies an HMAC keyed from it (key.c). */
EVP_MAC *crypt_evp_hmac(void)
{
	pthread_once(&fetched, fetch);
	return hmac;
}

const EVP_CIPHER *crypt_evp_cipher(enum crypt_mode mode)
{
	pthread_once(&fetched, fetch);
	switch (mode) {
	case CRYPT_MODE_AES_256_XTS:
		return xts;
	case CRYPT_MODE_AES_256_GCM:
		return gcm;
	case CRYPT_MODE_AES_256_CTS:
		return cts;
	}
	return NULL;
}
