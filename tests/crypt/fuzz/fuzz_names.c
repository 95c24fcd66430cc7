/*
 * fuzz_names.c - libFuzzer target for what a directory lookup parses from
 * a user: no-key names (base64url of a ciphertext) and ciphertexts handed
 * to name decryption, and what ponyfs reads back from its database: a
 * symlink's encrypted target and a policy (inodes.crypt). A no-key name
 * that parses must name the ciphertext it decodes to and nothing one byte
 * different; a policy that decodes must encode back to the same bytes;
 * nothing may crash or read past its input. Built and run by
 * scripts/fuzz.sh.
 */
#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "pony/crypt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t key[32] = { 1, 2, 3 };
	uint8_t ct[CRYPT_NAME_MAX], digest[32];
	char name[CRYPT_NAME_MAX + 1];
	size_t n;
	bool long_form;

	static char target[CRYPT_SYMLINK_MAX + 1];
	struct crypt_policy p;
	uint8_t again[CRYPT_POLICY_SIZE];

	if (crypt_policy_decode(data, size, &p) == 0) {
		crypt_policy_encode(&p, again);
		assert(size == CRYPT_POLICY_SIZE && !memcmp(again, data, size));
	}
	if (crypt_symlink_decrypt(key, data, size, target, &n) == 0)
		assert(n >= 1 && n <= size && strlen(target) == n);
	if (size > CRYPT_NAME_MAX)
		return 0;
	if (crypt_nokey_name_parse((const char *)data, size, ct, &n, &long_form, digest) == 0) {
		assert(n >= 16 && n <= CRYPT_NOKEY_BYTES);
		if (!long_form) {
			assert(crypt_nokey_name_matches((const char *)data, size, ct, n));
			ct[n - 1] ^= 1;
			assert(!crypt_nokey_name_matches((const char *)data, size, ct, n));
		}
	}
	if (crypt_name_decrypt(key, data, size, name, &n) == 0)
		assert(n >= 1 && n <= size && !memchr(name, '/', n) && strlen(name) == n);
	return 0;
}
