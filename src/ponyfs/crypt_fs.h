/*
 * crypt_fs.h - encryption inside ponyfs (docs/crypt.md), the calls its
 * files share: master keys added to the mount (crypt_keys.c), policies of
 * directories (crypt_policy.c), encrypted names (crypt_names.c) and
 * contents (crypt_data.c). Included at the end of internal.h: it needs
 * the filesystem's and the inode's structures.
 */
#ifndef PONYFS_CRYPT_FS_H
#define PONYFS_CRYPT_FS_H

/* Encryption: keys (crypt_keys.c). */
/* The key id names, if added (removing ones only when open_ok). */
struct ponyfs_key *ponyfs_key_find(struct ponyfs *fs, const uint8_t id[CRYPT_KEY_ID_SIZE],
				   bool open_ok);
/* c's per-file key for mode (its length: crypt_mode_key_size()); -ENOKEY. */
int ponyfs_crypt_key_locked(struct ponyfs *fs, const struct ponyfs_crypt *c, enum crypt_mode mode,
			    bool open_ok, uint8_t *key);
void ponyfs_keys_free(struct ponyfs *fs);
/* An encrypted inode closed: an incompletely removed key may go now. */
void ponyfs_keys_closed_locked(struct ponyfs *fs);
int ponyfs_add_key(struct vfs *v, const struct vfs_ctx *ctx, const void *key, size_t len,
		   uint8_t id[16], const struct vfs_inval *inval);
int ponyfs_remove_key(struct vfs *v, const struct vfs_ctx *ctx, const uint8_t id[16],
		      unsigned flags, const struct vfs_inval *inval, unsigned *ret_flags);
int ponyfs_key_status(struct vfs *v, const struct vfs_ctx *ctx, const uint8_t id[16],
		      struct vfs_key_status *ret);
int ponyfs_crypt_salt(struct vfs *v, uint8_t salt[16]);

/* Encryption: policies (crypt_policy.c). */
/* inodes.crypt's value (NULL: none) into c; -EUCLEAN when it is not one. */
int ponyfs_crypt_decode(const void *blob, size_t len, struct ponyfs_crypt *c);
void ponyfs_crypt_encode(const struct ponyfs_crypt *c, uint8_t out[PONYFS_CRYPT_BYTES]);
/* ino's encryption (off: none), from its cached inode or its row. */
int ponyfs_inode_crypt_locked(struct ponyfs *fs, uint64_t ino, struct ponyfs_crypt *c);
/* The cached encryption of directory ino (read on a miss); NULL when no
 * inode of the filesystem is encrypted. */
int ponyfs_dircrypt_locked(struct ponyfs *fs, uint64_t ino, struct ponyfs_dircrypt **ret);
/* Its names key; -ENOKEY without the key. */
int ponyfs_dircrypt_key_locked(struct ponyfs *fs, struct ponyfs_dircrypt *d);
void ponyfs_dircrypt_forget(struct ponyfs *fs, uint64_t ino);
int ponyfs_crypt_init_locked(struct ponyfs *fs);        /* mount: crypt_any, the cache */
void ponyfs_crypt_done(struct ponyfs *fs);
int ponyfs_set_policy(struct vfs *v, const struct vfs_ctx *ctx, uint64_t ino, const void *policy,
		      size_t len);
int ponyfs_get_policy(struct vfs *v, uint64_t ino, void *buf, size_t size);
int ponyfs_get_nonce(struct vfs *v, uint64_t ino, uint8_t nonce[16]);

/* Encryption: names (crypt_names.c). */
/*
 * A name as dentries.name holds it: the component itself, or in an
 * encrypted directory its ciphertext. FIND accepts a no-key name without
 * the key (and finds a long one's ciphertext); CREATE needs the key
 * (-ENOKEY). The directory's encryption comes with it: a new inode
 * inherits it.
 */
enum ponyfs_name_use { PONYFS_NAME_FIND, PONYFS_NAME_CREATE };
struct ponyfs_name {
	const uint8_t *bytes;
	size_t len;
	struct ponyfs_crypt dir;        /* the directory's */
	uint8_t buf[CRYPT_NAME_MAX];
};
int ponyfs_name_locked(struct ponyfs *fs, uint64_t parent, const char *name,
		       enum ponyfs_name_use use, struct ponyfs_name *ret);
/* An entry's name as a listing shows it, malloc'd: the plaintext with the
 * key, the no-key name without. */
char *ponyfs_name_show_locked(struct ponyfs *fs, struct ponyfs_dircrypt *d, const uint8_t *bytes,
			      size_t len);
/* A new inode's encryption under a directory's (fresh nonce); off: none. */
int ponyfs_crypt_inherit_locked(struct ponyfs *fs, const struct ponyfs_crypt *dir,
				struct ponyfs_crypt *ret);
/* A symlink's target as stored (in buf, PATH_MAX bytes) and back. */
int ponyfs_symlink_seal_locked(struct ponyfs *fs, const struct ponyfs_crypt *c, const char *target,
			       uint8_t *buf, size_t *ret_len);
int ponyfs_symlink_show_locked(struct ponyfs *fs, const struct ponyfs_crypt *c, const uint8_t *stored,
			       size_t len, char *buf, size_t size);

/* Encryption: contents (crypt_data.c). */
/* The cipher of in for an open (regular files): -ENOKEY without the key. */
int ponyfs_crypt_open_locked(struct ponyfs *fs, struct ponyfs_inode *in);
void ponyfs_crypt_close(struct ponyfs_inode *in);   /* wipes */
/* -ENOKEY when in is encrypted and its key was removed by force. */
static inline int ponyfs_crypt_usable(const struct ponyfs_inode *in)
{
	return in->crypt.on && !in->cipher ? -ENOKEY : 0;
}
/* k pages of in (consecutive indexes from pg[0]) encrypted into out; for
 * a GCM file each block's seal (PONYFS_SEAL_BYTES, CRC first) into seals,
 * else its CRC32C (4 bytes) of the ciphertext. */
int ponyfs_crypt_pages(struct ponyfs_inode *in, const struct ponyfs_page *pg, uint64_t k,
		       uint8_t *out, uint8_t *csums);
/* n blocks read for file blocks fblk.. in place back to plaintext (seals:
 * GCM's nonce and tag per block, NULL for XTS); cipher NULL: in's own. */
int ponyfs_crypt_blocks(struct ponyfs_inode *in, struct crypt_contents *cipher, uint64_t fblk,
			uint64_t n, const uint8_t *seals, uint8_t *buf);
/* A cipher for one unlocked read (a clone of in's); NULL for a file not
 * encrypted. -ENOKEY: the key was removed. */
int ponyfs_crypt_reader_locked(struct ponyfs_inode *in, struct crypt_contents **ret);
/* Bytes a block takes in extents.csums for flags. */
static inline size_t ponyfs_csum_stride(unsigned flags)
{
	return flags & PONYFS_EXT_SEALED ? PONYFS_SEAL_BYTES : 4;
}

/*
 * Encrypted writeback (crypt_data.c): k pages of in encrypted and
 * checksummed into csums as ponyfs_crypt_pages() does, and written to
 * blocks [p, p+k) by the helper while the caller goes on to the next run
 * (a run under PONYFS_HELPER_MIN_BLOCKS: in line, its error returned; a
 * short one while a gather is on: into the gather, written at its end).
 * A write's error comes back from the next call or from
 * ponyfs_crypt_out_drain_locked(), which a writeback calls before it ends:
 * until then the blocks may not be on the disk yet.
 */
int ponyfs_crypt_out_locked(struct ponyfs *fs, struct ponyfs_inode *in,
			    const struct ponyfs_page *pg, uint64_t k, uint64_t p, uint8_t *csums);
int ponyfs_crypt_out_drain_locked(struct ponyfs *fs);
void ponyfs_crypt_out_free(struct ponyfs *fs);         /* at unmount, drained */
/* The bounce buffer the next run fills; NULL before the first run. */
const uint8_t *ponyfs_crypt_out_next_buf(const struct ponyfs *fs);

/*
 * The helpers (helper.c): a job runs fn(arg) on one of the mount's
 * helper threads (acall workers) from ponyfs_job_start() on, or, when
 * they are all busy or absent, on the caller inside ponyfs_job_wait(),
 * which returns fn's value. Every started job must be waited for; its
 * memory stays the caller's till then.
 */
struct acall_op;
struct ponyfs_helper_slot;
struct ponyfs_job {
	int (*fn)(void *arg);
	void *arg;
	struct acall_op *op;            /* on a helper; NULL: runs in line */
	struct ponyfs_helper_slot *slot;        /* that helper */
};
void ponyfs_helper_start_locked(struct ponyfs *fs);    /* at an encrypted open */
void ponyfs_helper_stop(struct ponyfs *fs);             /* at unmount */
/* A job of fewer blocks runs in line: its hand-off (a wake-up on another
 * CPU and the wait for it) costs more than the cipher it would hide. */
#define PONYFS_HELPER_MIN_BLOCKS 64u
void ponyfs_job_start(struct ponyfs *fs, struct ponyfs_job *j);
int ponyfs_job_wait(struct ponyfs *fs, struct ponyfs_job *j);
/*
 * A share: pieces [0, pieces) of a job, piece(arg, i, cipher) each, taken
 * in turn by the caller (with cipher[0]) and a helper (cipher[1]) until
 * none is left or one failed. Returns the first failure, or 0.
 */
struct crypt_contents;
struct ponyfs_share {
	int (*piece)(void *arg, uint64_t i, struct crypt_contents *cipher);
	void *arg;
	uint64_t pieces;
	struct crypt_contents *cipher[2];       /* the caller's, the helper's */
	_Atomic uint64_t next;          /* the next piece to take */
	_Atomic int err;                /* the first failure: the other stops */
};
int ponyfs_share_run(struct ponyfs *fs, struct ponyfs_share *s);

#endif
