/*
 * crypt_keys.c - the master keys a mount holds, fscrypt's way: a key is
 * added to the filesystem (not to a process or a user's keyring), named by
 * its 16-byte identifier, and claimed by each user who added it; it goes
 * when the last claim is removed. Only the HKDF pseudorandom key is kept,
 * never the raw key, and nothing of it is ever written to disk or logged;
 * every copy is wiped (OPENSSL_cleanse) when it goes.
 *
 * Removal (fscrypt's FS_IOC_REMOVE_ENCRYPTION_KEY): the front end is told
 * every inode and name under the key first, with no lock held, so the
 * kernel writes its dirty pages back through us while the key is still
 * here and then drops its cached plaintext and names; then the daemon
 * writes back and drops its own. Files still open keep the key
 * "incompletely removed" until their last close, unless the removal is
 * forced: then they lose it too and every later read or write of theirs
 * fails with ENOKEY.
 */
#include <errno.h>
#include <openssl/rand.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct ponyfs_key *ponyfs_key_find(struct ponyfs *fs, const uint8_t id[CRYPT_KEY_ID_SIZE],
				   bool open_ok)
{
	for (struct ponyfs_key *k = fs->keys; k; k = k->next)
		if (!memcmp(k->master.id, id, CRYPT_KEY_ID_SIZE) && (open_ok || !k->removing))
			return k;
	return NULL;
}

int ponyfs_crypt_key_locked(struct ponyfs *fs, const struct ponyfs_crypt *c, enum crypt_mode mode,
			    bool open_ok, uint8_t *key)
{
	struct ponyfs_key *k = ponyfs_key_find(fs, c->policy.key_id, open_ok);

	if (!k)
		return -ENOKEY;
	return crypt_file_key(&k->master, c->nonce, mode, key, crypt_mode_key_size(mode));
}

static void key_wipe_free(struct ponyfs_key *k)
{
	crypt_master_wipe(&k->master);
	crypt_wipe(k, sizeof(*k));
	free(k);
}

static void key_free(struct ponyfs *fs, struct ponyfs_key *k)
{
	struct ponyfs_key **pp = &fs->keys;

	while (*pp != k)
		pp = &(*pp)->next;
	*pp = k->next;
	key_wipe_free(k);
	fs->key_gen++;
}

void ponyfs_keys_free(struct ponyfs *fs)
{
	while (fs->keys)
		key_free(fs, fs->keys);
}

static bool key_claimed_by(const struct ponyfs_key *k, uid_t uid)
{
	for (unsigned i = 0; i < k->nusers; i++)
		if (k->users[i] == uid)
			return true;
	return false;
}

static bool inode_under(const struct ponyfs_inode *in, const struct ponyfs_key *k)
{
	return in->crypt.on && !memcmp(in->crypt.policy.key_id, k->master.id, CRYPT_KEY_ID_SIZE);
}

/* Cached inodes under k: each written back (while the key can still
 * encrypt) and its cipher dropped, an open one's only when drop_open; the
 * count of those open with a cipher left in *ret_open. */
static int inodes_settle(struct ponyfs *fs, struct ponyfs_key *k, bool drop_open,
			 unsigned *ret_open)
{
	int r = 0;

	*ret_open = 0;
	for (unsigned h = 0; h < ARRAY_SIZE(fs->hash); h++) {
		for (struct ponyfs_inode *in = fs->hash[h], *next; in; in = next) {
			next = in->hnext;
			if (!inode_under(in, k))
				continue;
			if (r >= 0)
				r = ponyfs_writeback_locked(fs, in);
			if (r >= 0 && (drop_open || !in->opens))
				ponyfs_crypt_close(in);
			*ret_open += in->opens > 0 && in->cipher;
			if (r >= 0)
				ponyfs_inode_put_locked(fs, in);
		}
	}
	return r;
}

/* Names keys of k's directories in the cache, wiped. */
static void dircrypt_drop(struct ponyfs *fs, const struct ponyfs_key *k)
{
	for (unsigned i = 0; i < PONYFS_DIRCRYPT_SLOTS && fs->dircrypt; i++) {
		struct ponyfs_dircrypt *d = &fs->dircrypt[i];

		if (d->ino && d->c.on && !memcmp(d->c.policy.key_id, k->master.id, CRYPT_KEY_ID_SIZE))
			ponyfs_dircrypt_forget(fs, d->ino);
	}
}

void ponyfs_keys_closed_locked(struct ponyfs *fs)
{
	for (struct ponyfs_key *k = fs->keys, *next; k; k = next) {
		unsigned open;

		next = k->next;
		if (k->removing && inodes_settle(fs, k, false, &open) >= 0 && !open)
			key_free(fs, k);
	}
}

/* What the front end must drop: inodes under k, and names in their directories. */
struct inval_list {
	uint64_t *inos;
	size_t ninos;
	struct { uint64_t parent; char *name; } *names;
	size_t nnames;
};

static void inval_list_free(struct inval_list *l)
{
	for (size_t i = 0; i < l->nnames; i++)
		free(l->names[i].name);
	free(l->names);
	free(l->inos);
}

/* One name for the front end to drop; name NULL: out of memory. */
static int inval_add_name(struct inval_list *l, uint64_t dir, char *name)
{
	void *p = name ? realloc(l->names, (l->nnames + 1) * sizeof(*l->names)) : NULL;

	if (!p) {
		free(name);
		return -ENOMEM;
	}
	l->names = p;
	l->names[l->nnames].parent = dir;
	l->names[l->nnames++].name = name;
	return 0;
}

/* dir's entries in both forms the kernel may cache: the no-key name and,
 * with the key, the plaintext (a negative entry from before included). */
static int inval_add_names(struct ponyfs *fs, uint64_t dir, struct inval_list *l)
{
	struct ponyfs_dircrypt *d;
	sqlite3_stmt *s;
	int r = ponyfs_dircrypt_locked(fs, dir, &d);

	if (r >= 0)
		r = ponyfs_prepare(fs, "SELECT name FROM dentries WHERE parent = ?1", &s);
	if (r < 0 || !d || !d->c.on)
		return r < 0 ? r : 0;
	sqlite3_bind_int64(s, 1, (int64_t)dir);
	while ((r = ponyfs_step_row(fs, s)) > 0) {
		const uint8_t *ct = sqlite3_column_blob(s, 0);
		size_t len = (size_t)sqlite3_column_bytes(s, 0);
		char nokey[CRYPT_NAME_MAX + 1];

		r = crypt_nokey_name(ct, len, nokey);
		if (r >= 0)
			r = inval_add_name(l, dir, strdup(nokey));
		if (r >= 0 && ponyfs_dircrypt_key_locked(fs, d) >= 0)
			r = inval_add_name(l, dir, ponyfs_name_show_locked(fs, d, ct, len));
		if (r < 0)
			break;
	}
	sqlite3_reset(s);
	return r;
}

/* Every inode under key id, and the names in those that are directories. */
static int inval_collect(struct ponyfs *fs, const uint8_t id[CRYPT_KEY_ID_SIZE],
			 struct inval_list *l)
{
	sqlite3_stmt *s;
	int r = ponyfs_prepare(fs, "SELECT ino FROM inodes WHERE crypt IS NOT NULL "
			       "AND substr(crypt, 9, 16) = ?1", &s);

	if (r < 0)
		return r;
	sqlite3_bind_blob(s, 1, id, CRYPT_KEY_ID_SIZE, SQLITE_STATIC);
	while ((r = ponyfs_step_row(fs, s)) > 0) {
		void *p = realloc(l->inos, (l->ninos + 1) * sizeof(*l->inos));

		if (!p) {
			r = -ENOMEM;
			break;
		}
		l->inos = p;
		l->inos[l->ninos++] = (uint64_t)sqlite3_column_int64(s, 0);
	}
	sqlite3_reset(s);
	for (size_t i = 0; r >= 0 && i < l->ninos; i++)
		r = inval_add_names(fs, l->inos[i], l);
	return r;
}

static void inval_send(const struct vfs_inval *inval, const struct inval_list *l)
{
	if (!inval)
		return;
	for (size_t i = 0; i < l->nnames; i++)
		if (inval->entry)
			inval->entry(inval->data, l->names[i].parent, l->names[i].name);
	for (size_t i = 0; i < l->ninos; i++)
		if (inval->inode)
			inval->inode(inval->data, l->inos[i]);
}

int ponyfs_add_key(struct vfs *v, const struct vfs_ctx *ctx, const void *key, size_t len,
		   uint8_t id[16], const struct vfs_inval *inval)
{
	struct ponyfs *fs = ponyfs_of(v);
	struct ponyfs_key *k = calloc(1, sizeof(*k)), *have;
	struct inval_list l = { 0 };
	int r;

	if (!k)
		return -ENOMEM;
	r = crypt_master_init(&k->master, key, len);
	if (r < 0) {
		free(k);
		return r;
	}
	memcpy(id, k->master.id, CRYPT_KEY_ID_SIZE);
	pthread_mutex_lock(&fs->lock);
	have = ponyfs_key_find(fs, id, true);
	if (have) {
		/* Added again: one more claim, and present again if it was
		 * being removed (fscrypt's rule). */
		key_wipe_free(k);
		k = have;
		k->removing = false;
		r = 0;
	} else {
		k->next = fs->keys;
		fs->keys = k;
		/* What the kernel cached without the key (no-key names, negative
		 * entries of plaintext names, listings) goes: the same files now
		 * show their plaintext. */
		if (inval && inval_collect(fs, id, &l) < 0) {
			inval_list_free(&l);    /* the kernel's stale names stay */
			l = (struct inval_list){ 0 };
		}
		r = 0;
	}
	if (r >= 0 && !key_claimed_by(k, ctx->uid)) {
		if (k->nusers < PONYFS_KEY_USERS)
			k->users[k->nusers++] = ctx->uid;
		else
			r = -EDQUOT;    /* as fscrypt's per-user key quota */
	}
	fs->key_gen++;
	pthread_mutex_unlock(&fs->lock);
	inval_send(inval, &l);
	inval_list_free(&l);
	return r;
}

int ponyfs_remove_key(struct vfs *v, const struct vfs_ctx *ctx, const uint8_t id[16],
		      unsigned flags, const struct vfs_inval *inval, unsigned *ret_flags)
{
	struct ponyfs *fs = ponyfs_of(v);
	struct inval_list l = { 0 };
	struct ponyfs_key *k;
	unsigned open = 0;
	int r = 0;

	*ret_flags = 0;
	if ((flags & VFS_KEY_ALL_USERS) && ctx->uid != 0)
		return -EACCES;
	pthread_mutex_lock(&fs->lock);
	k = ponyfs_key_find(fs, id, true);
	/* An incompletely removed key has no claim left: anyone may try its
	 * removal again (Linux's rule), as files may have closed since. */
	if (!k || (!(flags & VFS_KEY_ALL_USERS) && !k->removing && !key_claimed_by(k, ctx->uid)))
		r = -ENOKEY;
	/* One user's claim of several: the key stays. */
	if (r >= 0 && !(flags & VFS_KEY_ALL_USERS) && !k->removing && k->nusers > 1) {
		for (unsigned i = 0; i < k->nusers; i++)
			if (k->users[i] == ctx->uid)
				k->users[i] = k->users[--k->nusers];
		*ret_flags = VFS_KEY_OTHER_USERS;
		pthread_mutex_unlock(&fs->lock);
		return 0;
	}
	if (r >= 0)
		r = inval_collect(fs, k->master.id, &l);
	pthread_mutex_unlock(&fs->lock);
	if (r < 0) {
		inval_list_free(&l);
		return r;
	}
	/* Unlocked: the kernel writes its dirty pages of these files back
	 * through us while the key is still here. */
	inval_send(inval, &l);
	inval_list_free(&l);
	pthread_mutex_lock(&fs->lock);
	k = ponyfs_key_find(fs, id, true);
	if (!k) {
		pthread_mutex_unlock(&fs->lock);
		return 0;               /* another removal got there first */
	}
	k->nusers = 0;
	k->removing = true;
	fs->key_gen++;
	dircrypt_drop(fs, k);
	r = inodes_settle(fs, k, flags & VFS_KEY_FORCE, &open);
	if (r >= 0 && open && !(flags & VFS_KEY_FORCE))
		*ret_flags = VFS_KEY_FILES_BUSY;
	else if (r >= 0)
		key_free(fs, k);
	pthread_mutex_unlock(&fs->lock);
	return r;
}

int ponyfs_key_status(struct vfs *v, const struct vfs_ctx *ctx, const uint8_t id[16],
		      struct vfs_key_status *ret)
{
	struct ponyfs *fs = ponyfs_of(v);
	struct ponyfs_key *k;

	pthread_mutex_lock(&fs->lock);
	k = ponyfs_key_find(fs, id, true);
	*ret = (struct vfs_key_status){ .status = !k ? VFS_KEY_ABSENT : k->removing ?
					VFS_KEY_INCOMPLETELY_REMOVED : VFS_KEY_PRESENT };
	if (k && !k->removing) {
		ret->added_by_self = key_claimed_by(k, ctx->uid);
		ret->user_count = k->nusers;
	}
	pthread_mutex_unlock(&fs->lock);
	return 0;
}

/* The salt of passphrase keys, in the meta table; made on first ask. */
static int salt_locked(struct ponyfs *fs, uint8_t salt[16])
{
	sqlite3_stmt *s;
	int r = ponyfs_prepare(fs, "SELECT value FROM meta WHERE key = 'crypt_salt'", &s);

	if (r < 0)
		return r;
	r = ponyfs_step_row(fs, s);
	if (r > 0 && sqlite3_column_bytes(s, 0) == CRYPT_SALT_SIZE)
		memcpy(salt, sqlite3_column_blob(s, 0), CRYPT_SALT_SIZE);
	else if (r > 0)
		r = -EUCLEAN;
	sqlite3_reset(s);
	if (r != 0)
		return r < 0 ? r : 0;
	if (fs->read_only)
		return -EROFS;
	if (RAND_bytes(salt, CRYPT_SALT_SIZE) != 1)
		return -EIO;
	r = ponyfs_meta_reserve_locked(fs, &(struct ponyfs_cost){ .rows = 1 }, NULL);
	if (r >= 0)
		r = ponyfs_txn_begin_locked(fs);
	if (r >= 0)
		r = ponyfs_prepare(fs, "INSERT INTO meta (key, value) VALUES ('crypt_salt', ?1)", &s);
	if (r < 0)
		return r;
	sqlite3_bind_blob(s, 1, salt, CRYPT_SALT_SIZE, SQLITE_TRANSIENT);
	r = ponyfs_step_done(fs, s);
	/* Durable before anyone derives a key from it. */
	return r < 0 ? r : ponyfs_commit_locked(fs);
}

int ponyfs_crypt_salt(struct vfs *v, uint8_t salt[16])
{
	struct ponyfs *fs = ponyfs_of(v);
	int r;

	pthread_mutex_lock(&fs->lock);
	r = fs->shut_down ? -EIO : fs->broken ? fs->broken : salt_locked(fs, salt);
	pthread_mutex_unlock(&fs->lock);
	return r;
}
