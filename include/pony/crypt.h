/*
 * include/pony/crypt.h - the ciphers of ponyfs encryption, with fscrypt's
 * key model (policy v2): a 64-byte master key, its 16-byte identifier and
 * every per-file key derived from it with HKDF-SHA512 exactly as Linux
 * derives them, so one master key names and opens the same files on ext4
 * and on ponyfs. Contents are AES-256-XTS per 4 KiB block (tweak: the
 * block's number in the file) or, beyond fscrypt, AES-256-GCM per block
 * (random nonce, tag kept beside the block); names are AES-256-CTS-CBC,
 * padded, deterministic per directory. OpenSSL does the cipher work.
 * Formats and derivations: docs/crypt.md.
 *
 * Returns are 0 or -errno; -EINVAL for a bad size, -EBADMSG for a GCM tag
 * or a name that does not verify, -EIO when OpenSSL fails.
 */
#ifndef PONY_CRYPT_H
#define PONY_CRYPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CRYPT_MASTER_KEY_SIZE 64        /* what add-key takes, and fscrypt's largest */
#define CRYPT_KEY_ID_SIZE 16
#define CRYPT_NONCE_SIZE 16             /* per inode, random, kept in its metadata */
#define CRYPT_BLOCK_SIZE 4096           /* a contents data unit: one ponyfs block */
#define CRYPT_GCM_NONCE_SIZE 12
#define CRYPT_GCM_TAG_SIZE 16
#define CRYPT_NAME_MAX 255
#define CRYPT_SYMLINK_MAX 4095          /* a symlink's target, encrypted as names are */

/* Modes, with Linux's numbers (FSCRYPT_MODE_*); GCM is pony's own. */
enum crypt_mode {
	CRYPT_MODE_AES_256_XTS = 1,
	CRYPT_MODE_AES_256_CTS = 4,
	CRYPT_MODE_AES_256_GCM = 128,
};

/*
 * A policy (policy.c): on the wire and on disk, Linux's struct
 * fscrypt_policy_v2, 24 bytes: version (2), contents mode (XTS or GCM),
 * filenames mode (CTS), flags (name padding 4 << (flags & 3); nothing
 * else), 4 zero bytes, the master key's identifier.
 */
#define CRYPT_POLICY_SIZE 24
struct crypt_policy {
	enum crypt_mode contents_mode, filenames_mode;
	uint8_t flags;
	uint8_t key_id[CRYPT_KEY_ID_SIZE];
};
/* -EINVAL for any byte pony cannot honour exactly (as Linux refuses it). */
int crypt_policy_decode(const uint8_t *buf, size_t len, struct crypt_policy *ret);
void crypt_policy_encode(const struct crypt_policy *p, uint8_t out[CRYPT_POLICY_SIZE]);
unsigned crypt_policy_pad(const struct crypt_policy *p);         /* 4, 8, 16 or 32 */
bool crypt_policy_equal(const struct crypt_policy *a, const struct crypt_policy *b);
/* "aes-256-xts", "aes-256-gcm", "aes-256-cts" and back; -EINVAL, "unknown". */
int crypt_mode_from_name(const char *name, enum crypt_mode *ret);
const char *crypt_mode_name(enum crypt_mode mode);

/* A master key as the filesystem keeps it while it is added: the HKDF
 * pseudorandom key (the raw key is not kept), the identifier, and an
 * HMAC-SHA512 keyed with the prk that each derivation copies. Not to be
 * copied by value; crypt_master_wipe() frees it. */
struct evp_mac_ctx_st;
struct crypt_master {
	uint8_t prk[64];
	uint8_t id[CRYPT_KEY_ID_SIZE];
	struct evp_mac_ctx_st *hmac;    /* OpenSSL's EVP_MAC_CTX */
};

/* From the raw key (CRYPT_MASTER_KEY_SIZE bytes, else -EINVAL). */
int crypt_master_init(struct crypt_master *m, const uint8_t *key, size_t len);
/*
 * A master key from a passphrase: scrypt (RFC 7914) with a random salt the
 * filesystem keeps. CRYPT_SCRYPT_DEFAULT costs 64 MiB and a fraction of a
 * second, as gocryptfs's default does. -EINVAL: an empty passphrase, or N
 * not a power of two.
 */
struct crypt_scrypt_cost { uint64_t n; uint32_t r, p; };
#define CRYPT_SCRYPT_DEFAULT ((struct crypt_scrypt_cost){ 1u << 16, 8, 1 })
#define CRYPT_SALT_SIZE 16
int crypt_scrypt(const char *pass, size_t len, const uint8_t *salt, size_t salt_len,
		 const struct crypt_scrypt_cost *cost, uint8_t *out, size_t out_len);
/* Frees and wipes it (OPENSSL_cleanse): no key stays in freed memory.
 * One that crypt_master_init() failed on needs none. */
void crypt_master_wipe(struct crypt_master *m);
/* The key size a mode's per-file key has: 64 (XTS), 32 (CTS, GCM); 0: unknown. */
size_t crypt_mode_key_size(enum crypt_mode mode);
/* An inode's key for mode, from its nonce (fscrypt's per-file key). */
int crypt_file_key(const struct crypt_master *m, const uint8_t nonce[CRYPT_NONCE_SIZE],
		   enum crypt_mode mode, uint8_t *key, size_t key_len);
void crypt_wipe(void *p, size_t len);

/*
 * Random bytes for nonces, from OpenSSL's DRBG a pool at a time (one
 * RAND_bytes() costs as much as a block's cipher), the pools growing from
 * CRYPT_RANDOM_FIRST bytes (a cipher that seals one block draws little).
 * Zeroed memory is an empty pool. Not shared between threads at once;
 * each byte is handed out once. -EINVAL: len over the pool; -EIO: the
 * DRBG failed.
 */
#define CRYPT_RANDOM_POOL 3072          /* 256 GCM nonces, 192 inode nonces */
#define CRYPT_RANDOM_FIRST 48           /* the first refill; each next one twice the last */
struct crypt_random {
	unsigned left, fill;            /* bytes left; the last refill's size */
	uint8_t pool[CRYPT_RANDOM_POOL];
};
int crypt_random_draw(struct crypt_random *r, void *out, size_t len);
void crypt_random_done(struct crypt_random *r);         /* wipes what is left */

/*
 * A per-file contents cipher: XTS or GCM with the file's key. Not shared
 * between threads at once (each holds an OpenSSL context).
 */
struct crypt_contents;
int crypt_contents_new(enum crypt_mode mode, const uint8_t *key, size_t key_len,
		       struct crypt_contents **ret);
/* Another context with c's key, for another thread: several times cheaper
 * than crypt_contents_new() (the key schedules are copied, not derived).
 * Its GCM nonces are its own. c's decrypting context is made on the way
 * (crypt_contents_new() leaves it to the first decryption), so c too is
 * the caller's alone during the call. */
int crypt_contents_clone(struct crypt_contents *c, struct crypt_contents **ret);
void crypt_contents_free(struct crypt_contents *c);      /* wipes; NULL: nothing */
/* XTS: block number lblk of the file, CRYPT_BLOCK_SIZE bytes, in place allowed. */
int crypt_xts_encrypt(struct crypt_contents *c, uint64_t lblk, const uint8_t *in, uint8_t *out);
int crypt_xts_decrypt(struct crypt_contents *c, uint64_t lblk, const uint8_t *in, uint8_t *out);
/* GCM: a fresh random nonce per seal; the block number is authenticated
 * too, so a block moved to another offset does not verify. */
int crypt_gcm_seal(struct crypt_contents *c, uint64_t lblk, const uint8_t *in, uint8_t *out,
		   uint8_t nonce[CRYPT_GCM_NONCE_SIZE], uint8_t tag[CRYPT_GCM_TAG_SIZE]);
int crypt_gcm_open(struct crypt_contents *c, uint64_t lblk, const uint8_t *in, uint8_t *out,
		   const uint8_t nonce[CRYPT_GCM_NONCE_SIZE], const uint8_t tag[CRYPT_GCM_TAG_SIZE]);

/*
 * Names: encrypted with the directory's CTS key, NUL-padded to a multiple
 * of pad (4, 8, 16 or 32: the policy's flags) and to at least 16 bytes.
 * out holds CRYPT_NAME_MAX bytes; *ret_len gets the ciphertext's length.
 */
size_t crypt_name_encrypted_len(size_t len, unsigned pad);
int crypt_name_encrypt(const uint8_t key[32], unsigned pad, const char *name, size_t len,
		       uint8_t *out, size_t *ret_len);
/* The name (NULs of the padding removed) in out (CRYPT_NAME_MAX + 1 bytes, NUL-ended). */
int crypt_name_decrypt(const uint8_t key[32], const uint8_t *in, size_t len, char *out,
		       size_t *ret_len);

/*
 * A directory's names key made once into its CTS contexts, for the many
 * names of one directory: making them (OpenSSL's context, its CS3
 * parameter, the key schedules) cost more than encrypting a name. Not
 * shared between threads at once; crypt_names_free() cleanses (NULL:
 * nothing). As crypt_name_encrypt() and crypt_name_decrypt().
 */
struct crypt_names;
int crypt_names_new(const uint8_t key[32], struct crypt_names **ret);
void crypt_names_free(struct crypt_names *n);
int crypt_names_encrypt(struct crypt_names *names, unsigned pad, const char *name, size_t len,
			uint8_t *out, size_t *ret_len);
int crypt_names_decrypt(struct crypt_names *names, const uint8_t *in, size_t len, char *out,
			size_t *ret_len);

/* A symlink's target: as a name, with the symlink's own CTS key, up to
 * CRYPT_SYMLINK_MAX bytes (out that many; decrypted, one more for the NUL). */
int crypt_symlink_encrypt(const uint8_t key[32], unsigned pad, const char *target, size_t len,
			  uint8_t *out, size_t *ret_len);
int crypt_symlink_decrypt(const uint8_t key[32], const uint8_t *in, size_t len, char *out,
			  size_t *ret_len);

/*
 * No-key names, as fscrypt shows them without the key: base64url (no
 * padding) of 8 bytes of directory hash (zeros on ponyfs), then the
 * ciphertext, or for a ciphertext over 149 bytes its first 149 and the
 * SHA-256 of the rest. out holds CRYPT_NAME_MAX + 1 bytes. A symlink's
 * target (up to CRYPT_SYMLINK_MAX) shows the same way without the key.
 */
#define CRYPT_NOKEY_BYTES 149
int crypt_nokey_name(const uint8_t *ct, size_t len, char *out);
/* Back to what it names: the ciphertext (*ret_len bytes) when it was
 * short, else its first 149 bytes and *ret_digest = true with the SHA-256
 * of the rest in digest. -EINVAL: not a no-key name. */
int crypt_nokey_name_parse(const char *name, size_t len, uint8_t *ct, size_t *ret_len,
			   bool *ret_digest, uint8_t digest[32]);
/* Whether a ciphertext is the one a no-key name names. */
bool crypt_nokey_name_matches(const char *name, size_t len, const uint8_t *ct, size_t ct_len);

#endif
