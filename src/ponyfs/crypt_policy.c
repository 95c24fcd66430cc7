/*
 * crypt_policy.c - which inodes are encrypted, and how. An encrypted
 * inode's row holds its policy (struct fscrypt_policy_v2's 24 bytes) and
 * its own random 16-byte nonce in inodes.crypt; a policy is set on an
 * empty directory and everything made below inherits it with a fresh
 * nonce, as fscrypt does. Regular files, directories and symlinks are
 * encrypted; device nodes, fifos and sockets have nothing to encrypt.
 *
 * Every lookup in an encrypted directory needs the directory's policy and
 * names key, so directories' are cached in a small table keyed by inode
 * number (numbers are never reused); a filesystem with no encrypted inode
 * never looks (fs->crypt_any).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int ponyfs_crypt_decode(const void *blob, size_t len, struct ponyfs_crypt *c)
{
	memset(c, 0, sizeof(*c));
	if (!blob)
		return 0;
	if (len != PONYFS_CRYPT_BYTES || crypt_policy_decode(blob, CRYPT_POLICY_SIZE, &c->policy) < 0)
		return -EUCLEAN;
	memcpy(c->nonce, (const uint8_t *)blob + CRYPT_POLICY_SIZE, CRYPT_NONCE_SIZE);
	c->on = true;
	return 0;
}

void ponyfs_crypt_encode(const struct ponyfs_crypt *c, uint8_t out[PONYFS_CRYPT_BYTES])
{
	crypt_policy_encode(&c->policy, out);
	memcpy(out + CRYPT_POLICY_SIZE, c->nonce, CRYPT_NONCE_SIZE);
}

/* A nonce is what makes an inode's key its own: random, as fscrypt's,
 * from the mount's pool (an untar made one per file). */
static int nonce_new_locked(struct ponyfs *fs, uint8_t nonce[CRYPT_NONCE_SIZE])
{
	return crypt_random_draw(&fs->nonces, nonce, CRYPT_NONCE_SIZE);
}

int ponyfs_crypt_inherit_locked(struct ponyfs *fs, const struct ponyfs_crypt *dir,
				struct ponyfs_crypt *ret)
{
	int r;

	memset(ret, 0, sizeof(*ret));
	if (!dir->on)
		return 0;
	ret->policy = dir->policy;
	r = nonce_new_locked(fs, ret->nonce);
	ret->on = r >= 0;
	return r;
}

/* ino's inodes.crypt (-ENOENT: no such inode), and its mode when asked. */
static int inode_crypt(struct ponyfs *fs, uint64_t ino, struct ponyfs_crypt *c, mode_t *ret_mode)
{
	sqlite3_stmt *s;
	int r = ponyfs_row_of(fs, "SELECT crypt, mode FROM inodes WHERE ino = ?1", ino, &s);

	if (r < 0)
		return r;
	r = ponyfs_crypt_decode(sqlite3_column_blob(s, 0), (size_t)sqlite3_column_bytes(s, 0), c);
	if (ret_mode)
		*ret_mode = (mode_t)sqlite3_column_int64(s, 1);
	sqlite3_reset(s);
	return r;
}

int ponyfs_inode_crypt_locked(struct ponyfs *fs, uint64_t ino, struct ponyfs_crypt *c)
{
	struct ponyfs_inode *in = ponyfs_inode_find(fs, ino);

	if (in) {
		*c = in->crypt;
		return 0;
	}
	if (!fs->crypt_any) {
		memset(c, 0, sizeof(*c));
		return 0;
	}
	return inode_crypt(fs, ino, c, NULL);
}

int ponyfs_dircrypt_locked(struct ponyfs *fs, uint64_t ino, struct ponyfs_dircrypt **ret)
{
	struct ponyfs_dircrypt *d;
	int r;

	*ret = NULL;
	if (!fs->crypt_any)
		return 0;
	d = &fs->dircrypt[ino % PONYFS_DIRCRYPT_SLOTS];
	if (d->ino != ino) {
		ponyfs_dircrypt_forget(fs, d->ino);
		r = inode_crypt(fs, ino, &d->c, NULL);
		if (r < 0)
			return r;
		d->ino = ino;
	}
	*ret = d;
	return 0;
}

/* Made again after any change of the keys: one may have gone. */
int ponyfs_dircrypt_key_locked(struct ponyfs *fs, struct ponyfs_dircrypt *d)
{
	uint8_t key[32];
	int r;

	if (d->names && d->key_gen == fs->key_gen)
		return 0;
	crypt_names_free(d->names);
	d->names = NULL;
	r = ponyfs_crypt_key_locked(fs, &d->c, CRYPT_MODE_AES_256_CTS, false, key);
	if (r >= 0)
		r = crypt_names_new(key, &d->names);
	crypt_wipe(key, sizeof(key));
	if (r >= 0)
		d->key_gen = fs->key_gen;
	return r;
}

static void dircrypt_clear(struct ponyfs_dircrypt *d)
{
	crypt_names_free(d->names);
	crypt_wipe(d, sizeof(*d));      /* ino 0, names NULL: an empty slot */
}

void ponyfs_dircrypt_forget(struct ponyfs *fs, uint64_t ino)
{
	struct ponyfs_dircrypt *d;

	if (!fs->dircrypt || !ino)
		return;
	d = &fs->dircrypt[ino % PONYFS_DIRCRYPT_SLOTS];
	if (d->ino == ino)
		dircrypt_clear(d);
}

int ponyfs_crypt_init_locked(struct ponyfs *fs)
{
	int64_t any = 0;
	int r;

	fs->dircrypt = calloc(PONYFS_DIRCRYPT_SLOTS, sizeof(*fs->dircrypt));
	if (!fs->dircrypt)
		return -ENOMEM;
	/* An index of the encrypted inodes alone: nothing for a filesystem
	 * without them, and key removal finds its files by it. */
	r = ponyfs_sql_int(fs, &any, "SELECT EXISTS (SELECT 1 FROM inodes WHERE crypt IS NOT NULL)", 0);
	fs->crypt_any = r >= 0 && any;
	return r < 0 ? r : 0;
}

void ponyfs_crypt_done(struct ponyfs *fs)
{
	ponyfs_crypt_out_free(fs);
	ponyfs_helper_stop(fs);
	for (unsigned i = 0; fs->dircrypt && i < PONYFS_DIRCRYPT_SLOTS; i++)
		dircrypt_clear(&fs->dircrypt[i]);
	free(fs->dircrypt);
	fs->dircrypt = NULL;
	crypt_random_done(&fs->nonces);
	ponyfs_keys_free(fs);
}

/* -- the hooks ---------------------------------------------------------- */

static int dir_has_entries(struct ponyfs *fs, uint64_t ino)
{
	int64_t one;
	int r = ponyfs_sql_int(fs, &one, "SELECT 1 FROM dentries WHERE parent = ?1 LIMIT 1", 1,
			       (int64_t)ino);

	return r == -ENOENT ? 0 : r < 0 ? r : 1;
}

static int set_policy_locked(struct ponyfs *fs, const struct vfs_ctx *ctx, uint64_t ino,
			     const void *policy, size_t len)
{
	struct ponyfs_crypt cur, c = { .on = true };
	uint8_t blob[PONYFS_CRYPT_BYTES];
	struct ponyfs_key *k;
	sqlite3_stmt *s;
	int64_t uid = 0;
	mode_t mode = 0;
	int r = crypt_policy_decode(policy, len, &c.policy);

	if (r >= 0)
		r = inode_crypt(fs, ino, &cur, &mode);
	if (r >= 0 && !S_ISDIR(mode))
		r = -ENOTDIR;
	if (r >= 0)
		r = ponyfs_sql_int(fs, &uid, "SELECT uid FROM inodes WHERE ino = ?1", 1, (int64_t)ino);
	/* As Linux: the directory's owner (or root), with the key added. */
	if (r >= 0 && ctx->uid != 0 && (uid_t)uid != ctx->uid)
		r = -EACCES;
	if (r >= 0 && cur.on)
		return crypt_policy_equal(&cur.policy, &c.policy) ? 0 : -EEXIST;
	if (r >= 0 && fs->read_only)
		r = -EROFS;
	if (r >= 0)
		r = dir_has_entries(fs, ino) ? -ENOTEMPTY : 0;
	/* As Linux's fscrypt_verify_key_added(): the caller must have added
	 * the key, unless privileged (CAP_FOWNER: root here), who may set a
	 * policy for a key not added yet. */
	k = r >= 0 ? ponyfs_key_find(fs, c.policy.key_id, false) : NULL;
	if (r >= 0 && ctx->uid != 0) {
		bool claim = false;

		for (unsigned i = 0; k && i < k->nusers; i++)
			claim |= k->users[i] == ctx->uid;
		r = claim ? 0 : -ENOKEY;
	}
	if (r >= 0)
		r = nonce_new_locked(fs, c.nonce);
	if (r >= 0)
		r = ponyfs_meta_reserve_locked(fs, &(struct ponyfs_cost){ .rows = 1 }, NULL);
	if (r >= 0)
		r = ponyfs_txn_begin_locked(fs);
	if (r >= 0)
		r = ponyfs_prepare(fs, "UPDATE inodes SET crypt = ?2, ctime = ?3 WHERE ino = ?1", &s);
	if (r < 0)
		return r;
	ponyfs_crypt_encode(&c, blob);
	sqlite3_bind_int64(s, 1, (int64_t)ino);
	sqlite3_bind_blob(s, 2, blob, sizeof(blob), SQLITE_TRANSIENT);
	sqlite3_bind_int64(s, 3, ponyfs_now());
	r = ponyfs_step_done(fs, s);
	if (r >= 0) {
		struct ponyfs_inode *in = ponyfs_inode_find(fs, ino);

		if (in)
			in->crypt = c;
		fs->crypt_any = true;
		ponyfs_dircrypt_forget(fs, ino);
	}
	return r;
}

int ponyfs_set_policy(struct vfs *v, const struct vfs_ctx *ctx, uint64_t ino, const void *policy,
		      size_t len)
{
	struct ponyfs *fs = ponyfs_of(v);
	int r;

	pthread_mutex_lock(&fs->lock);
	r = fs->shut_down ? -EIO : fs->broken ? fs->broken :
	    set_policy_locked(fs, ctx, ino, policy, len);
	pthread_mutex_unlock(&fs->lock);
	return r;
}

/* ino's policy and nonce; -ENODATA when it is not encrypted. */
static int crypt_of(struct ponyfs *fs, uint64_t ino, struct ponyfs_crypt *c)
{
	int r;

	pthread_mutex_lock(&fs->lock);
	r = fs->shut_down ? -EIO : inode_crypt(fs, ino, c, NULL);
	pthread_mutex_unlock(&fs->lock);
	return r < 0 ? r : c->on ? 0 : -ENODATA;
}

int ponyfs_get_policy(struct vfs *v, uint64_t ino, void *buf, size_t size)
{
	struct ponyfs_crypt c;
	int r = crypt_of(ponyfs_of(v), ino, &c);

	if (r >= 0 && size < CRYPT_POLICY_SIZE)
		r = -EOVERFLOW;
	if (r >= 0)
		crypt_policy_encode(&c.policy, buf);
	return r < 0 ? r : CRYPT_POLICY_SIZE;
}

int ponyfs_get_nonce(struct vfs *v, uint64_t ino, uint8_t nonce[16])
{
	struct ponyfs_crypt c;
	int r = crypt_of(ponyfs_of(v), ino, &c);

	if (r >= 0)
		memcpy(nonce, c.nonce, CRYPT_NONCE_SIZE);
	return r;
}
