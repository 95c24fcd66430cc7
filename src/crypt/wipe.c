/*
 * wipe.c - crypt_wipe(): key material cleared so the compiler cannot drop
 * the stores (explicit_bzero, as OPENSSL_cleanse does). A file of its own:
 * the FUSE front end wipes the keys it hands on and needs nothing else of
 * crypt, so programs that link it without encryption (pony-overlayfs) do
 * not load OpenSSL for it.
 */
#include <string.h>

#include "pony/crypt.h"

void crypt_wipe(void *p, size_t len)
{
	explicit_bzero(p, len);
}
