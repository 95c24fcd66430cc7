/*
 * fsck_crypt.c - fsck's encryption pass, which needs no key: every
 * inodes.crypt value is a policy pony honours and a nonce (never all
 * zeros: a random one is not), only regular files, directories and
 * symlinks are encrypted, everything of those kinds in an encrypted
 * directory is encrypted under that directory's policy (else a file could
 * sit in clear where its directory promises otherwise), an encrypted
 * directory's names are at least one AES block of ciphertext, and an
 * aes-256-gcm file's written extents carry their seals (and only its).
 * Block checksums are the ciphertext's, so fsck_blocks.c checks them as
 * any others. Nothing here is repaired: each is a person's call.
 */
#include <errno.h>
#include <string.h>

#include "fsck.h"

/* crypt: 40 bytes of policy and nonce; mode: of its inode. */
static int bad_crypt(struct fsck *f, const struct fsck_row *row)
{
	struct ponyfs_crypt c;
	static const uint8_t zero[CRYPT_NONCE_SIZE];
	mode_t mode = (mode_t)row->v[1];

	if (ponyfs_crypt_decode(row->blob, row->blob_len, &c) < 0)
		fsck_problem(f, "crypt", (uint64_t)row->v[0], false, "encryption field of %zu bytes "
			     "is no policy pony knows (a %d-byte fscrypt v2 policy and a %d-byte "
			     "nonce)", row->blob_len, CRYPT_POLICY_SIZE, CRYPT_NONCE_SIZE);
	else if (!memcmp(c.nonce, zero, sizeof(zero)))
		fsck_problem(f, "crypt", (uint64_t)row->v[0], false, "encrypted, but its nonce is "
			     "missing (all zeros)");
	else if (!S_ISREG(mode) && !S_ISDIR(mode) && !S_ISLNK(mode))
		fsck_problem(f, "crypt", (uint64_t)row->v[0], false, "encrypted, but of a kind "
			     "fscrypt never encrypts (mode %o)", (unsigned)mode);
	return 0;
}

static int outside_policy(struct fsck *f, const struct fsck_row *row)
{
	fsck_problem(f, "crypt", (uint64_t)row->v[1], false, "in encrypted directory %lld but %s",
		     (long long)row->v[0], row->v[2] ? "under another policy" : "not encrypted");
	return 0;
}

static int short_name(struct fsck *f, const struct fsck_row *row)
{
	fsck_problem(f, "crypt", (uint64_t)row->v[1], false, "its name in encrypted directory "
		     "%lld is %lld bytes, less than the 16 of any encrypted name",
		     (long long)row->v[0], (long long)row->v[2]);
	return 0;
}

static int seal_mismatch(struct fsck *f, const struct fsck_row *row)
{
	fsck_problem(f, "crypt", (uint64_t)row->v[0], false, "block %lld (file offset %lld): %s",
		     (long long)row->v[1], (long long)row->v[1] * BS, row->v[2] ?
		     "sealed extent (GCM nonce and tag) in a file whose contents mode is not GCM" :
		     "written extent without the GCM seals its contents mode needs");
	return 0;
}

int fsck_crypt(struct fsck *f)
{
	/* The contents mode is the policy's second byte. */
	static const char gcm[] = "(i.crypt IS NOT NULL AND substr(i.crypt, 2, 1) = X'80')";
	char sql[512];
	int r = fsck_each(f, "SELECT ino, mode, 0, 0, crypt FROM inodes WHERE crypt IS NOT NULL",
			  bad_crypt);

	if (r >= 0)
		r = fsck_each(f, "SELECT d.parent, d.ino, c.crypt IS NOT NULL FROM dentries d "
			      "JOIN inodes p ON p.ino = d.parent JOIN inodes c ON c.ino = d.ino "
			      "WHERE p.crypt IS NOT NULL AND (c.mode & 61440) IN (32768, 16384, 40960) "
			      "AND (c.crypt IS NULL OR substr(c.crypt, 1, 24) IS NOT substr(p.crypt, 1, 24))",
			      outside_policy);
	if (r >= 0)
		r = fsck_each(f, "SELECT d.parent, d.ino, length(d.name) FROM dentries d JOIN inodes p "
			      "ON p.ino = d.parent WHERE p.crypt IS NOT NULL AND length(d.name) < 16",
			      short_name);
	snprintf(sql, sizeof(sql), "SELECT e.ino, e.foff, (e.flags & %d) != 0 FROM extents e "
		 "JOIN inodes i ON i.ino = e.ino WHERE NOT (e.flags & %d) AND "
		 "((e.flags & %d) != 0) != %s", PONYFS_EXT_SEALED, PONYFS_EXT_UNWRITTEN,
		 PONYFS_EXT_SEALED, gcm);
	if (r >= 0)
		r = fsck_each(f, sql, seal_mismatch);
	return r;
}
