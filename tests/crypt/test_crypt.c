/*
 * test_crypt.c - the ciphers of ponyfs encryption on their own: key sizes
 * refused, the identifier Linux gives for a known key (a vector ext4
 * computed: tests/crypt/crypt_ext4.sh checks the same against the kernel
 * live), contents that decrypt only at their own block number, GCM that
 * refuses a changed or moved block, names padded and deterministic, and
 * no-key names that name exactly their ciphertext, and nonces drawn from
 * a pool that hands out each once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <cmocka.h>

#include "pony/crypt.h"

/* FS_IOC_ADD_ENCRYPTION_KEY on ext4 (Linux 6.1) for the key 00 01 .. 3f. */
#define EXT4_ID_OF_KEY_0_TO_63 "8699c2c53707405da5aba5ae4d8583c0"

static void key_of(uint8_t *key, uint8_t seed)
{
	for (unsigned i = 0; i < CRYPT_MASTER_KEY_SIZE; i++)
		key[i] = (uint8_t)(seed + i);
}

static void hex(const uint8_t *b, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

static void test_master_keys_are_64_bytes_and_named_as_linux_names_them(void **state)
{
	uint8_t key[CRYPT_MASTER_KEY_SIZE + 1];
	struct crypt_master m, m2;
	char id[33];

	key_of(key, 0);
	assert_int_equal(crypt_master_init(&m, key, 32), -EINVAL);
	assert_int_equal(crypt_master_init(&m, key, 65), -EINVAL);
	assert_int_equal(crypt_master_init(&m, key, CRYPT_MASTER_KEY_SIZE), 0);
	hex(m.id, sizeof(m.id), id);
	assert_string_equal(id, EXT4_ID_OF_KEY_0_TO_63);
	key[0] ^= 1;
	assert_int_equal(crypt_master_init(&m2, key, CRYPT_MASTER_KEY_SIZE), 0);
	assert_memory_not_equal(m.id, m2.id, sizeof(m.id));
	crypt_master_wipe(&m2);
	crypt_master_wipe(&m);
	for (size_t i = 0; i < sizeof(m); i++)
		assert_int_equal(((uint8_t *)&m)[i], 0);
}

static void test_file_keys_differ_per_nonce_and_fit_their_mode(void **state)
{
	uint8_t key[CRYPT_MASTER_KEY_SIZE], n1[16] = { 1 }, n2[16] = { 2 }, k1[64], k2[64];
	struct crypt_master m;

	key_of(key, 7);
	assert_int_equal(crypt_master_init(&m, key, sizeof(key)), 0);
	assert_int_equal(crypt_file_key(&m, n1, CRYPT_MODE_AES_256_XTS, k1, 32), -EINVAL);
	assert_int_equal(crypt_file_key(&m, n1, CRYPT_MODE_AES_256_XTS, k1, 64), 0);
	assert_int_equal(crypt_file_key(&m, n2, CRYPT_MODE_AES_256_XTS, k2, 64), 0);
	assert_memory_not_equal(k1, k2, 64);
	assert_int_equal(crypt_file_key(&m, n1, CRYPT_MODE_AES_256_XTS, k2, 64), 0);
	assert_memory_equal(k1, k2, 64);
	assert_int_equal(crypt_file_key(&m, n1, CRYPT_MODE_AES_256_CTS, k2, 32), 0);
	assert_int_equal(crypt_file_key(&m, n1, (enum crypt_mode)9, k2, 32), -EINVAL);
	crypt_master_wipe(&m);
}

static struct crypt_contents *contents_of(enum crypt_mode mode, uint8_t seed)
{
	uint8_t key[CRYPT_MASTER_KEY_SIZE], nonce[16] = { seed }, fk[64];
	struct crypt_contents *c;
	struct crypt_master m;

	key_of(key, seed);
	assert_int_equal(crypt_master_init(&m, key, sizeof(key)), 0);
	assert_int_equal(crypt_file_key(&m, nonce, mode, fk, crypt_mode_key_size(mode)), 0);
	assert_int_equal(crypt_contents_new(mode, fk, crypt_mode_key_size(mode), &c), 0);
	crypt_master_wipe(&m);
	return c;
}

static void test_xts_blocks_decrypt_only_at_their_own_number(void **state)
{
	static uint8_t plain[CRYPT_BLOCK_SIZE], a[CRYPT_BLOCK_SIZE], b[CRYPT_BLOCK_SIZE],
		back[CRYPT_BLOCK_SIZE];
	struct crypt_contents *c = contents_of(CRYPT_MODE_AES_256_XTS, 3), *bad;
	uint8_t same[64], tag[16], nonce[12];

	memset(plain, 'p', sizeof(plain));
	assert_int_equal(crypt_xts_encrypt(c, 5, plain, a), 0);
	assert_int_equal(crypt_xts_encrypt(c, 6, plain, b), 0);
	assert_memory_not_equal(a, plain, 16);
	assert_memory_not_equal(a, b, 16);             /* the tweak is the block number */
	assert_int_equal(crypt_xts_decrypt(c, 5, a, back), 0);
	assert_memory_equal(back, plain, sizeof(plain));
	assert_int_equal(crypt_xts_decrypt(c, 6, a, back), 0);
	assert_memory_not_equal(back, plain, 16);
	/* In place, and again: the same block number gives the same bytes. */
	memcpy(back, plain, sizeof(plain));
	assert_int_equal(crypt_xts_encrypt(c, 5, back, back), 0);
	assert_memory_equal(back, a, sizeof(a));
	assert_int_equal(crypt_gcm_seal(c, 5, plain, a, nonce, tag), -EINVAL);
	/* A clone (another thread's context) has the same key. */
	assert_int_equal(crypt_contents_clone(c, &bad), 0);
	crypt_contents_free(c);
	assert_int_equal(crypt_xts_decrypt(bad, 5, a, back), 0);
	assert_memory_equal(back, plain, sizeof(plain));
	crypt_contents_free(bad);
	/* XTS refuses a key whose halves are equal. */
	memset(same, 0x11, sizeof(same));
	assert_int_equal(crypt_contents_new(CRYPT_MODE_AES_256_XTS, same, 64, &bad), -EIO);
	assert_null(bad);
	assert_int_equal(crypt_contents_new(CRYPT_MODE_AES_256_XTS, same, 32, &bad), -EINVAL);
}

/* A cipher makes its decrypting context at its first decryption: one
 * that has only encrypted still decrypts, itself or through a clone made
 * before any decryption, in both modes. */
static void test_decryption_is_made_when_first_needed(void **state)
{
	static uint8_t plain[CRYPT_BLOCK_SIZE], ct[CRYPT_BLOCK_SIZE], back[CRYPT_BLOCK_SIZE];
	uint8_t nonce[CRYPT_GCM_NONCE_SIZE], tag[CRYPT_GCM_TAG_SIZE];
	enum crypt_mode modes[] = { CRYPT_MODE_AES_256_XTS, CRYPT_MODE_AES_256_GCM };

	memset(plain, 'q', sizeof(plain));
	for (unsigned m = 0; m < 2; m++) {
		for (unsigned via_clone = 0; via_clone < 2; via_clone++) {
			struct crypt_contents *c = contents_of(modes[m], 11), *k = c;
			bool xts = modes[m] == CRYPT_MODE_AES_256_XTS;

			assert_int_equal(xts ? crypt_xts_encrypt(c, 3, plain, ct) :
					 crypt_gcm_seal(c, 3, plain, ct, nonce, tag), 0);
			if (via_clone)
				assert_int_equal(crypt_contents_clone(c, &k), 0);
			memset(back, 0, sizeof(back));
			assert_int_equal(xts ? crypt_xts_decrypt(k, 3, ct, back) :
					 crypt_gcm_open(k, 3, ct, back, nonce, tag), 0);
			assert_memory_equal(back, plain, sizeof(plain));
			if (k != c)
				crypt_contents_free(k);
			crypt_contents_free(c);
		}
	}
}

static void test_gcm_refuses_a_changed_or_moved_block(void **state)
{
	static uint8_t plain[CRYPT_BLOCK_SIZE], sealed[CRYPT_BLOCK_SIZE], again[CRYPT_BLOCK_SIZE],
		back[CRYPT_BLOCK_SIZE];
	struct crypt_contents *c = contents_of(CRYPT_MODE_AES_256_GCM, 4);
	uint8_t nonce[12], nonce2[12], tag[16], tag2[16];

	memset(plain, 'g', sizeof(plain));
	assert_int_equal(crypt_gcm_seal(c, 9, plain, sealed, nonce, tag), 0);
	assert_int_equal(crypt_gcm_open(c, 9, sealed, back, nonce, tag), 0);
	assert_memory_equal(back, plain, sizeof(plain));
	/* A fresh nonce each time: the same block seals differently. */
	assert_int_equal(crypt_gcm_seal(c, 9, plain, again, nonce2, tag2), 0);
	assert_memory_not_equal(nonce, nonce2, sizeof(nonce));
	assert_memory_not_equal(sealed, again, 16);
	/* Moved to another block number, changed, or a changed tag: refused, nothing shown. */
	assert_int_equal(crypt_gcm_open(c, 10, sealed, back, nonce, tag), -EBADMSG);
	for (size_t i = 0; i < sizeof(back); i++)
		assert_int_equal(back[i], 0);
	sealed[1234] ^= 0x20;
	assert_int_equal(crypt_gcm_open(c, 9, sealed, back, nonce, tag), -EBADMSG);
	sealed[1234] ^= 0x20;
	tag[0] ^= 1;
	assert_int_equal(crypt_gcm_open(c, 9, sealed, back, nonce, tag), -EBADMSG);
	tag[0] ^= 1;
	assert_int_equal(crypt_gcm_open(c, 9, sealed, back, nonce, tag), 0);
	assert_int_equal(crypt_xts_encrypt(c, 9, plain, back), -EINVAL);
	/* A clone opens what the original sealed, and seals with nonces of its own. */
	{
		struct crypt_contents *k;

		assert_int_equal(crypt_contents_clone(c, &k), 0);
		memset(back, 0, sizeof(back));
		assert_int_equal(crypt_gcm_open(k, 9, sealed, back, nonce, tag), 0);
		assert_memory_equal(back, plain, sizeof(plain));
		assert_int_equal(crypt_gcm_seal(k, 9, plain, again, nonce2, tag2), 0);
		assert_memory_not_equal(nonce, nonce2, sizeof(nonce));
		assert_int_equal(crypt_gcm_open(c, 9, again, back, nonce2, tag2), 0);
		crypt_contents_free(k);
	}
	crypt_contents_free(c);
}

static void test_names_are_padded_deterministic_and_come_back(void **state)
{
	uint8_t k1[32], k2[32], a[CRYPT_NAME_MAX], b[CRYPT_NAME_MAX];
	char name[CRYPT_NAME_MAX + 1], back[CRYPT_NAME_MAX + 1];
	size_t na, nb, nback;

	memset(k1, 1, sizeof(k1));
	memset(k2, 2, sizeof(k2));
	assert_int_equal(crypt_name_encrypted_len(1, 4), 16);
	assert_int_equal(crypt_name_encrypted_len(17, 4), 20);
	assert_int_equal(crypt_name_encrypted_len(17, 32), 32);
	assert_int_equal(crypt_name_encrypted_len(250, 32), 255);
	for (size_t len = 1; len <= CRYPT_NAME_MAX; len++) {
		for (size_t i = 0; i < len; i++)
			name[i] = (char)('a' + (i * 7 + len) % 26);
		assert_int_equal(crypt_name_encrypt(k1, 16, name, len, a, &na), 0);
		assert_int_equal(na, crypt_name_encrypted_len(len, 16));
		assert_int_equal(crypt_name_encrypt(k1, 16, name, len, b, &nb), 0);
		assert_memory_equal(a, b, na);          /* lookups encrypt and compare */
		assert_int_equal(crypt_name_encrypt(k2, 16, name, len, b, &nb), 0);
		assert_memory_not_equal(a, b, na);      /* another directory's key */
		assert_int_equal(crypt_name_decrypt(k1, a, na, back, &nback), 0);
		assert_int_equal(nback, len);
		assert_memory_equal(back, name, len);
	}
	assert_int_equal(crypt_name_encrypt(k1, 16, name, 0, a, &na), -EINVAL);
	assert_int_equal(crypt_name_encrypt(k1, 16, name, 256, a, &na), -EINVAL);
	assert_int_equal(crypt_name_encrypt(k1, 12, name, 5, a, &na), -EINVAL);
	assert_int_equal(crypt_name_decrypt(k1, a, 15, back, &nback), -EINVAL);
	/* Decrypted with the wrong key: garbage that is refused, or at least not the name. */
	assert_int_equal(crypt_name_encrypt(k1, 16, "hello", 5, a, &na), 0);
	if (crypt_name_decrypt(k2, a, na, back, &nback) == 0)
		assert_false(nback == 5 && !memcmp(back, "hello", 5));
}

static void test_nokey_names_name_exactly_their_ciphertext(void **state)
{
	uint8_t ct[CRYPT_NAME_MAX], other[CRYPT_NAME_MAX], got[CRYPT_NAME_MAX], digest[32];
	char nk[CRYPT_NAME_MAX + 1];
	size_t n;
	bool digested;

	for (size_t i = 0; i < sizeof(ct); i++)
		ct[i] = (uint8_t)(i * 13 + 1);
	memcpy(other, ct, sizeof(ct));
	other[200] ^= 1;
	/* Short: the ciphertext itself, back whole. */
	assert_int_equal(crypt_nokey_name(ct, 32, nk), 0);
	assert_int_equal(strlen(nk), (8 + 32) * 4 / 3 + 1);     /* 40 bytes, unpadded */
	assert_null(strpbrk(nk, "+/="));
	assert_int_equal(crypt_nokey_name_parse(nk, strlen(nk), got, &n, &digested, digest), 0);
	assert_false(digested);
	assert_int_equal(n, 32);
	assert_memory_equal(got, ct, 32);
	assert_true(crypt_nokey_name_matches(nk, strlen(nk), ct, 32));
	assert_false(crypt_nokey_name_matches(nk, strlen(nk), ct, 48));
	/* Long: 149 bytes and a digest of the rest, at most 252 characters. */
	assert_int_equal(crypt_nokey_name(ct, 255, nk), 0);
	assert_int_equal(strlen(nk), 252);
	assert_int_equal(crypt_nokey_name_parse(nk, strlen(nk), got, &n, &digested, digest), 0);
	assert_true(digested);
	assert_true(crypt_nokey_name_matches(nk, strlen(nk), ct, 255));
	assert_false(crypt_nokey_name_matches(nk, strlen(nk), other, 255));
	assert_false(crypt_nokey_name_matches(nk, strlen(nk), ct, 254));
	/* Not no-key names: other characters, too short, a stray bit. */
	assert_int_equal(crypt_nokey_name_parse("a/b", 3, got, &n, &digested, digest), -EINVAL);
	assert_int_equal(crypt_nokey_name_parse("abcd", 4, got, &n, &digested, digest), -EINVAL);
	assert_int_equal(crypt_nokey_name(ct, 32, nk), 0);
	nk[strlen(nk) - 1] = '_';                /* bits past the last byte set */
	assert_int_equal(crypt_nokey_name_parse(nk, strlen(nk), got, &n, &digested, digest), -EINVAL);
	assert_int_equal(crypt_nokey_name(ct, 15, nk), -EINVAL);
}

static void test_policies_are_linuxs_bytes_and_refuse_what_pony_cannot_honour(void **state)
{
	struct crypt_policy p = { CRYPT_MODE_AES_256_XTS, CRYPT_MODE_AES_256_CTS, 2, { 0xab, 1 } }, q;
	uint8_t b[CRYPT_POLICY_SIZE], bad[CRYPT_POLICY_SIZE];
	enum crypt_mode mode;

	crypt_policy_encode(&p, b);
	/* struct fscrypt_policy_v2: version, modes, flags, reserved, identifier. */
	assert_int_equal(b[0], 2);
	assert_int_equal(b[1], 1);
	assert_int_equal(b[2], 4);
	assert_int_equal(b[3], 2);
	assert_int_equal(b[8], 0xab);
	assert_int_equal(crypt_policy_decode(b, sizeof(b), &q), 0);
	assert_true(crypt_policy_equal(&p, &q));
	assert_int_equal(crypt_policy_pad(&q), 16);
	q.flags = 3;
	assert_false(crypt_policy_equal(&p, &q));
	assert_int_equal(crypt_policy_decode(b, sizeof(b) - 1, &q), -EINVAL);
	/* Each byte pony cannot honour: v1, other modes, DIRECT_KEY and IV flags, reserved. */
	const struct { unsigned at; uint8_t v; } refused[] = {
		{ 0, 1 }, { 0, 3 }, { 1, 4 }, { 1, 9 }, { 2, 1 }, { 2, 6 }, { 3, 0x04 }, { 3, 0x08 },
		{ 3, 0x10 }, { 4, 1 }, { 7, 1 },
	};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		memcpy(bad, b, sizeof(b));
		bad[refused[i].at] = refused[i].v;
		assert_int_equal(crypt_policy_decode(bad, sizeof(bad), &q), -EINVAL);
	}
	memcpy(bad, b, sizeof(b));
	bad[1] = CRYPT_MODE_AES_256_GCM;
	assert_int_equal(crypt_policy_decode(bad, sizeof(bad), &q), 0);
	assert_int_equal(q.contents_mode, CRYPT_MODE_AES_256_GCM);
	assert_int_equal(crypt_mode_from_name("aes-256-gcm", &mode), 0);
	assert_int_equal(mode, CRYPT_MODE_AES_256_GCM);
	assert_string_equal(crypt_mode_name(CRYPT_MODE_AES_256_XTS), "aes-256-xts");
	assert_int_equal(crypt_mode_from_name("aes-128-cbc", &mode), -EINVAL);
}

/* RFC 7914 section 12's third vector, then the default cost's properties. */
static void test_passphrases_become_keys_through_scrypt(void **state)
{
	static const uint8_t rfc[64] = {
		0xfd, 0xba, 0xbe, 0x1c, 0x9d, 0x34, 0x72, 0x00, 0x78, 0x56, 0xe7, 0x19, 0x0d, 0x01,
		0xe9, 0xfe, 0x7c, 0x6a, 0xd7, 0xcb, 0xc8, 0x23, 0x78, 0x30, 0xe7, 0x73, 0x76, 0x63,
		0x4b, 0x37, 0x31, 0x62, 0x2e, 0xaf, 0x30, 0xd9, 0x2e, 0x22, 0xa3, 0x88, 0x6f, 0xf1,
		0x09, 0x27, 0x9d, 0x98, 0x30, 0xda, 0xc7, 0x27, 0xaf, 0xb9, 0x4a, 0x83, 0xee, 0x6d,
		0x83, 0x60, 0xcb, 0xdf, 0xa2, 0xcc, 0x06, 0x40,
	};
	struct crypt_scrypt_cost cost = { 1024, 8, 16 }, dflt = CRYPT_SCRYPT_DEFAULT, odd = { 1000, 8, 1 };
	uint8_t salt[CRYPT_SALT_SIZE] = { 1 }, k1[64], k2[64];

	assert_int_equal(crypt_scrypt("password", 8, (const uint8_t *)"NaCl", 4, &cost, k1, 64), 0);
	assert_memory_equal(k1, rfc, 64);
	assert_int_equal(crypt_scrypt("a passphrase", 12, salt, sizeof(salt), &dflt, k1, 64), 0);
	salt[0] = 2;
	assert_int_equal(crypt_scrypt("a passphrase", 12, salt, sizeof(salt), &dflt, k2, 64), 0);
	assert_memory_not_equal(k1, k2, 64);            /* the salt counts */
	assert_int_equal(crypt_scrypt("", 0, salt, sizeof(salt), &dflt, k1, 64), -EINVAL);
	assert_int_equal(crypt_scrypt("x", 1, salt, sizeof(salt), &odd, k1, 64), -EINVAL);
}

/* 16-byte nonces over four refills of the pool: none repeats, and what
 * was handed out is no longer in the pool to be handed out again. */
static void test_random_pool_hands_out_each_nonce_once(void **state)
{
	static uint8_t got[4 * CRYPT_RANDOM_POOL / 16][16];
	static struct crypt_random r;
	static const uint8_t zero[16];
	size_t n = sizeof(got) / sizeof(got[0]);

	for (size_t i = 0; i < n; i++) {
		assert_int_equal(crypt_random_draw(&r, got[i], 16), 0);
		assert_memory_equal(r.pool + r.left, zero, 16);
		for (size_t j = 0; j < i; j++)
			assert_memory_not_equal(got[i], got[j], 16);
	}
	assert_int_equal(r.fill, CRYPT_RANDOM_POOL);    /* grown to whole pools */
	/* A draw the pool cannot hold is refused; a partial one refills. */
	assert_int_equal(crypt_random_draw(&r, got, CRYPT_RANDOM_POOL + 1), -EINVAL);
	r.left = 5;
	assert_int_equal(crypt_random_draw(&r, got[0], 12), 0);
	assert_int_equal(r.left, CRYPT_RANDOM_POOL - 12);
	crypt_random_done(&r);
	/* A new pool draws little at first (a small file's GCM cipher). */
	assert_int_equal(crypt_random_draw(&r, got[0], 12), 0);
	assert_int_equal(r.left, CRYPT_RANDOM_FIRST - 12);
	crypt_random_done(&r);
	for (size_t i = 0; i < sizeof(r); i++)
		assert_int_equal(((uint8_t *)&r)[i], 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_master_keys_are_64_bytes_and_named_as_linux_names_them),
		cmocka_unit_test(test_file_keys_differ_per_nonce_and_fit_their_mode),
		cmocka_unit_test(test_xts_blocks_decrypt_only_at_their_own_number),
		cmocka_unit_test(test_gcm_refuses_a_changed_or_moved_block),
		cmocka_unit_test(test_decryption_is_made_when_first_needed),
		cmocka_unit_test(test_names_are_padded_deterministic_and_come_back),
		cmocka_unit_test(test_nokey_names_name_exactly_their_ciphertext),
		cmocka_unit_test(test_policies_are_linuxs_bytes_and_refuse_what_pony_cannot_honour),
		cmocka_unit_test(test_passphrases_become_keys_through_scrypt),
		cmocka_unit_test(test_random_pool_hands_out_each_nonce_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
