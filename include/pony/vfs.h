/*
 * include/pony/vfs.h - the one filesystem interface of pony. Every pony
 * filesystem (hostfs, union, ponyfs) is an instance of `struct vfs` with a
 * const `struct vfs_ops` table; the FUSE front end exports any instance, and
 * tests drive instances directly from C, without FUSE.
 *
 * The table is inode-number based and close to libfuse's low-level API, so
 * the front end is a thin translation: an inode here is a 64-bit id handed out
 * by lookup-like hooks (lookup, mknod, mkdir, symlink, link, create) and held
 * until forget() drops as many references as were handed out. VFS_ROOT_INO is
 * always valid; forgetting it does nothing. The id is a handle, not st_ino: statx says
 * the file's st_ino.
 *
 * Rules for every hook:
 *  - Returns 0 (or a count where said) or a negative errno; never prints.
 *  - A NULL hook means -EOPNOTSUPP; call through vfs_*() helpers below or check.
 *  - Names are single components: no '/', not "." or ".."; longer than
 *    NAME_MAX is -ENAMETOOLONG (the instance checks, callers need not).
 *  - `ctx` says who asks (uid/gid for ownership of new files, umask for modes);
 *    permission checks are the front end's (FUSE default_permissions) or the
 *    caller's, so instances apply ownership, not access control.
 *  - Hooks may be called from several threads at once; instances lock inside.
 *  - Hooks are only ever appended; `version` says how many a table knows.
 */
#ifndef PONY_VFS_H
#define PONY_VFS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <sys/uio.h>

#define VFS_OPS_VERSION 11
#define VFS_ROOT_INO 1ull
#define VFS_NO_FH UINT64_MAX    /* statx/setattr without an open file */

struct vfs;

/* Who is asking: the caller's credentials and umask (FUSE's fuse_ctx). */
struct vfs_ctx {
	uid_t uid;
	gid_t gid;
	pid_t pid;
	mode_t umask;
};

/*
 * A looked-up inode: `ino` is the id to pass to later calls (one reference
 * taken, dropped by forget), `attr` its attributes with at least
 * STATX_BASIC_STATS. `generation` changes when an id is reused.
 */
struct vfs_entry {
	uint64_t ino;
	uint64_t generation;
	struct statx attr;
};

/* forget_multi: one id and the references dropped from it. */
struct vfs_forget {
	uint64_t ino;
	uint64_t nlookup;
};

/* setattr: which fields of struct vfs_setattr to apply (FUSE_SET_ATTR_*). */
enum {
	VFS_SET_MODE = 1 << 0,
	VFS_SET_UID = 1 << 1,
	VFS_SET_GID = 1 << 2,
	VFS_SET_SIZE = 1 << 3,
	VFS_SET_ATIME = 1 << 4,
	VFS_SET_MTIME = 1 << 5,
	VFS_SET_ATIME_NOW = 1 << 7,
	VFS_SET_MTIME_NOW = 1 << 8,
	VFS_SET_CTIME = 1 << 10,
};

struct vfs_setattr {
	unsigned valid;         /* VFS_SET_* */
	mode_t mode;
	uid_t uid;
	gid_t gid;
	uint64_t size;
	struct timespec atime, mtime;
};

/*
 * readdir's callback, once per entry in cookie order. `ino` is st_ino and
 * `type` a DT_* value; `next` is the cookie that resumes after this entry.
 * Returns 0 to go on, 1 when the caller's buffer is full (the entry was not
 * taken: readdir stops and returns 0), or a negative errno to stop with it.
 */
typedef int (*vfs_filldir_t)(void *data, const char *name, uint64_t ino,
			     unsigned type, uint64_t next);

/*
 * readdirplus's callback: as vfs_filldir_t, with the entry as lookup()
 * gives it, a reference on e->ino that the callback owns (it forgets it
 * when it does not take the entry). "." and ".." come with no reference
 * and only e->ino and the type in e->attr.stx_mode.
 */
typedef int (*vfs_filldirplus_t)(void *data, const char *name, const struct vfs_entry *e,
				 uint64_t next);

/* What a key removal tells a front end to drop from its kernel's caches. */
struct vfs_inval {
	void (*inode)(void *data, uint64_t ino);        /* its pages and attributes */
	void (*entry)(void *data, uint64_t parent, const char *name);
	void *data;
};
/* remove_key's flags in and out, and key_status's answer (fscrypt's numbers). */
enum {
	VFS_KEY_ALL_USERS = 1 << 0,     /* in: every user's claim (root) */
	VFS_KEY_FORCE = 1 << 1,         /* in: open files lose the key too */
};
enum { VFS_KEY_FILES_BUSY = 1 << 0, VFS_KEY_OTHER_USERS = 1 << 1 };   /* out */
enum { VFS_KEY_ABSENT = 1, VFS_KEY_PRESENT = 2, VFS_KEY_INCOMPLETELY_REMOVED = 3 };
struct vfs_key_status {
	unsigned status;                /* VFS_KEY_ABSENT... */
	bool added_by_self;             /* ctx's user holds a claim */
	unsigned user_count;            /* users holding a claim */
};

/* One piece of a file's layout: where its bytes live (the pNFS question). */
struct vfs_extent {
	uint64_t file_offset;
	uint64_t length;
	uint8_t device_uuid[16];        /* member device; all zero: not mapped */
	uint64_t device_offset;
	uint32_t flags;                 /* VFS_EXTENT_* */
};
enum { VFS_EXTENT_HOLE = 1 << 0, VFS_EXTENT_UNWRITTEN = 1 << 1 };

/*
 * layout_map's question and answer (docs/layout.md): the extents of a file
 * range, each with its state, its blocks' checksums and, where the data
 * region is a volume's, the member pieces that hold it (the volume
 * engine's own map). The caller owns the three arrays and says their
 * sizes; the instance fills what fits, whole extents, and says where the
 * next call starts.
 */
enum vfs_layout_state {
	VFS_LAYOUT_DATA = 0,            /* written: on the data region, checksummed */
	VFS_LAYOUT_UNWRITTEN = 1,       /* allocated, never written: reads as zeros */
	VFS_LAYOUT_HOLE = 2,            /* nothing allocated: reads as zeros */
	VFS_LAYOUT_DIRTY = 3,           /* being written: cached in the daemon, not on disk yet */
};
/* vfs_layout.flags, out. */
enum {
	VFS_LAYOUT_ENCRYPTED = 1 << 0,  /* the blocks are ciphertext: direct readers refuse */
	VFS_LAYOUT_ON_VOLUME = 1 << 1,  /* pieces name members (vfs_layout_topology) */
	VFS_LAYOUT_COMPLETE = 1 << 2,   /* the range is covered: no next call */
};
/* What a piece holds: a volume's enum volume_piece_role, value for value. */
enum { VFS_PIECE_DATA = 0, VFS_PIECE_COPY = 1, VFS_PIECE_P = 2, VFS_PIECE_Q = 3 };
#define VFS_LAYOUT_NO_OFFSET UINT64_MAX

struct vfs_layout_extent {
	uint64_t file_offset, length;   /* whole blocks */
	uint64_t volume_offset;         /* byte offset in the data region; NO_OFFSET: none */
	uint32_t state;                 /* enum vfs_layout_state */
	uint32_t first_csum;            /* DATA: csums[first_csum...], one per block */
	uint32_t first_piece, npieces;  /* pieces[first_piece...] (ON_VOLUME: DATA, UNWRITTEN) */
};

struct vfs_layout_piece {
	uint64_t file_offset, length;   /* the file bytes it holds (P, Q: their data piece's) */
	uint64_t member_offset;         /* byte offset on the member's device */
	uint32_t member;                /* index in vfs_layout_topology.members */
	uint32_t role;                  /* VFS_PIECE_* */
};

struct vfs_layout {
	/* in */
	uint64_t offset, length;        /* the file range; a call starts at offset */
	struct vfs_layout_extent *extents;
	uint32_t max_extents;
	uint32_t *csums;                /* CRC32C of each block as stored (ciphertext if encrypted) */
	uint32_t max_csums;
	struct vfs_layout_piece *pieces;
	uint32_t max_pieces;
	/* in: 0 no lease, VFS_LEASE_NEW, or a lease this call's extents join;
	 * out: the lease (0: none) and its milliseconds left */
	uint32_t lease;
	uint64_t lease_ms;
	/* out */
	uint32_t nextents, ncsums, npieces;
	uint32_t flags;                 /* VFS_LAYOUT_ENCRYPTED, _ON_VOLUME, _COMPLETE */
	uint32_t block_size;            /* bytes a checksum covers */
	uint64_t size;                  /* the file's size */
	uint64_t next;                  /* not COMPLETE: the offset to ask from next */
};

/* Layout leases (docs/layout.md "Leases"): layout_lease's ops and states. */
#define VFS_LEASE_NEW UINT32_MAX
enum { VFS_LEASE_STATUS = 0, VFS_LEASE_RETURN = 1 };
enum { VFS_LEASE_HELD = 0, VFS_LEASE_RECALLED = 1, VFS_LEASE_EXPIRED = 2 };

/*
 * Direct writes (version 10, docs/layout.md "Direct writes"). layout_write
 * hands a writer fresh whole stripes of the data region for a file range,
 * held under a write lease and recorded nowhere; the writer puts data and
 * parity on the members, then layout_commit makes them the file's.
 */
struct vfs_layout_write {
	/* in */
	uint64_t offset, length;        /* the file range (offset: whole blocks) */
	uint32_t lease;                 /* VFS_LEASE_NEW, or the write lease this grant joins */
	struct vfs_layout_piece *pieces;        /* where the granted stripes live */
	uint32_t max_pieces;
	/* out */
	uint32_t npieces;
	uint32_t block_size;
	uint64_t volume_offset;         /* the granted stripes' first byte in the data region */
	uint64_t granted;               /* bytes from offset: whole stripes, at most length rounded up */
	uint64_t stripe;                /* bytes of one whole stripe */
	uint64_t lease_ms;
};
/* One extent a commit makes the file's: file bytes to granted data-region bytes. */
struct vfs_layout_commit_extent {
	uint64_t file_offset, length, volume_offset;    /* whole blocks */
};
enum { VFS_COMMIT_LAST = 1 << 0 };      /* vfs_layout_commit.flags: apply what was sent */
struct vfs_layout_commit {
	uint32_t lease;
	uint32_t flags;                 /* VFS_COMMIT_LAST: this page ends the commit */
	uint64_t size;                  /* LAST: the file's size after */
	const struct vfs_layout_commit_extent *extents;
	uint32_t nextents;
	const uint32_t *csums;          /* CRC32C of every block of the extents, in order */
	uint32_t ncsums;
};

/* Where the data region lives: the volume's geometry and members. */
#define VFS_LAYOUT_MAX_MEMBERS 64
struct vfs_layout_member {
	const char *device;             /* its device's name; NULL: missing. Valid while mounted */
	uint8_t uuid[16];               /* member UUID (pony volume sets) */
	bool has_uuid;
	uint32_t state;                 /* 0 working, 1 failed, 2 rebuilding */
};
struct vfs_layout_topology {
	const char *level;              /* "raid6", "mirror", ... (static) */
	char layout[24];                /* md layout name ("left-symmetric"); "": none */
	uint64_t chunk;                 /* bytes; 0: none */
	uint64_t full_stripe;           /* bytes a writer fills at once */
	uint64_t region_offset;         /* where the data region starts in the volume */
	uint32_t nmembers;
	struct vfs_layout_member members[VFS_LAYOUT_MAX_MEMBERS];
};
enum { VFS_SHUTDOWN_FLUSH = 1 << 0 };   /* shutdown's flags */

/*
 * Bad blocks and scrub (version 9, docs/scrub.md). resolve says what lives
 * at one address: a volume byte, or a member's device byte (BY_MEMBER).
 */
enum vfs_resolve_what {
	VFS_RESOLVE_FREE = 0,           /* a data block no file uses */
	VFS_RESOLVE_FILE = 1,           /* a block of a file: ino, file_offset, paths */
	VFS_RESOLVE_METADATA = 2,       /* the metadata region or a metadata chunk: meta, page */
	VFS_RESOLVE_PARITY = 3,         /* P or Q of the stripe row [volume_offset, +row_length) */
	VFS_RESOLVE_NONE = 4,           /* in no region of the filesystem (volume superblocks) */
};
enum vfs_resolve_meta {
	VFS_META_SUPERBLOCK = 0, VFS_META_CHUNK_TABLE = 1, VFS_META_DATABASE = 2,
	VFS_META_WAL = 3, VFS_META_UNUSED = 4,
};
enum { VFS_RESOLVE_BY_MEMBER = 1 };     /* vfs_resolve.flags, in */
#define VFS_NO_MEMBER UINT32_MAX
#define VFS_RESOLVE_PATHS 3072
struct vfs_resolve {
	uint32_t flags;                 /* in */
	uint32_t member;                /* in with BY_MEMBER; out: the member holding the data */
	uint64_t member_offset;         /* in with BY_MEMBER; out: its device byte */
	uint64_t volume_offset;         /* in without BY_MEMBER; out */
	uint32_t what;                  /* enum vfs_resolve_what */
	uint32_t role;                  /* VFS_PIECE_* of the member byte */
	uint32_t meta;                  /* METADATA: enum vfs_resolve_meta */
	uint32_t npaths;                /* FILE: names of the inode (all hard links) */
	uint64_t page;                  /* METADATA: SQLite page (DATABASE) or WAL frame, from 1 */
	uint64_t row_length;            /* PARITY: the row's data bytes */
	uint64_t ino, file_offset;      /* FILE */
	uint64_t block;                 /* FREE, FILE: the data-region block */
	char paths[VFS_RESOLVE_PATHS];  /* FILE: the paths that fit, each NUL-terminated */
};

/* One known bad or repaired region (badblock hook). */
enum vfs_bad_source {
	VFS_BAD_MEMBER_LOG = 0,         /* a member's bad-block log (reads reconstructed) */
	VFS_BAD_READ = 1,               /* a checksum mismatch seen while serving a read */
	VFS_BAD_SCRUB = 2,              /* scrub: copies or parity disagree, or unreadable */
	VFS_BAD_SCRUB_CSUM = 3,         /* scrub: a file block failed its checksum */
};
struct vfs_badblock {
	uint32_t source;                /* enum vfs_bad_source */
	uint32_t repaired;              /* rewritten from redundancy */
	uint64_t length;                /* bytes */
	struct vfs_resolve where;       /* its first byte: member, offsets, what lives there */
};

/* scrub's question (op) and answer. */
enum vfs_scrub_op { VFS_SCRUB_STATUS = 0, VFS_SCRUB_START = 1, VFS_SCRUB_STOP = 2 };
enum vfs_scrub_state {
	VFS_SCRUB_IDLE = 0, VFS_SCRUB_RUNNING = 1, VFS_SCRUB_STOPPED = 2, VFS_SCRUB_DONE = 3,
	VFS_SCRUB_FAILED = 4,
};
struct vfs_scrub {
	uint32_t op;                    /* in */
	uint32_t state;                 /* out: enum vfs_scrub_state */
	uint64_t rate;                  /* in (START): bytes per second, 0: no limit; out */
	uint64_t position, total;       /* out: volume bytes scrubbed of the pass, and all */
	uint64_t checked, repaired, lost;       /* out: blocks */
	uint64_t elapsed_ms;            /* out: of this run */
	uint64_t yielded_ms;            /* out: of this run, spent waiting for foreground reads */
	int32_t error;                  /* out: FAILED: -errno */
};

struct vfs_ops {
	unsigned version;               /* VFS_OPS_VERSION the table was built for */
	const char *name;               /* "hostfs", "union", ... */
	/* read() may be called from several threads at once, alongside any
	 * other call: a front end may then answer large reads on helper
	 * threads while its worker serves the rest. */
	bool read_parallel;

	/* Frees the instance and everything it holds; open handles are gone. */
	void (*destroy)(struct vfs *fs);

	/* -- names -------------------------------------------------------- */
	/* Finds name in directory parent: one reference on ret->ino. -ENOENT. */
	int (*lookup)(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t parent,
		      const char *name, struct vfs_entry *ret);
	/* Drops nlookup references; the id is invalid when none are left. */
	void (*forget)(struct vfs *fs, uint64_t ino, uint64_t nlookup);

	/* -- attributes ---------------------------------------------------- */
	/*
	 * statx(2) of ino (through fh when not VFS_NO_FH): `mask` is the
	 * STATX_* fields wanted, `flags` AT_STATX_* (FORCE_SYNC, DONT_SYNC).
	 * An instance may fill more than asked, and must never do more work
	 * than the mask needs when it can avoid it; DONT_SYNC never flushes.
	 */
	int (*statx)(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t ino,
		     uint64_t fh, unsigned flags, unsigned mask, struct statx *ret);
	/* Applies attr (VFS_SET_*) and returns the new attributes in ret. */
	int (*setattr)(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t ino,
		       uint64_t fh, const struct vfs_setattr *attr, struct statx *ret);
	/* The symlink's target in buf (not NUL-terminated); returns its length. */
	int (*readlink)(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t ino,
			char *buf, size_t size);

	/* -- creating and removing names (each new entry takes a reference) */
	int (*mknod)(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t parent,
		     const char *name, mode_t mode, dev_t rdev, struct vfs_entry *ret);
	int (*mkdir)(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t parent,
		     const char *name, mode_t mode, struct vfs_entry *ret);
	int (*symlink)(struct vfs *fs, const struct vfs_ctx *ctx, const char *target,
		       uint64_t parent, const char *name, struct vfs_entry *ret);
	/* A new name for ino; ret is ino itself, one more reference. A NULL
	 * ret asks for no entry and takes no reference (a whiteout's link:
	 * hostfs then skips reading the new link count back). */
	int (*link)(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t ino,
		    uint64_t newparent, const char *newname, struct vfs_entry *ret);
	int (*unlink)(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t parent,
		      const char *name);
	int (*rmdir)(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t parent,
		     const char *name);
	/* flags: RENAME_NOREPLACE, RENAME_EXCHANGE, RENAME_WHITEOUT (renameat2). */
	int (*rename)(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t parent,
		      const char *name, uint64_t newparent, const char *newname,
		      unsigned flags);

	/* -- files ----------------------------------------------------------- */
	/* Opens ino with open(2) flags (no O_CREAT); *ret_fh names the open file. */
	int (*open)(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t ino,
		    int flags, uint64_t *ret_fh);
	/* Creates and opens name: a reference on ret->ino and an open file. */
	int (*create)(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t parent,
		      const char *name, mode_t mode, int flags,
		      struct vfs_entry *ret, uint64_t *ret_fh);
	/* Bytes read (0 at end of file) or -errno. */
	ssize_t (*read)(struct vfs *fs, uint64_t ino, uint64_t fh, void *buf,
			size_t size, off_t offset);
	/* Bytes written or -errno. */
	ssize_t (*write)(struct vfs *fs, uint64_t ino, uint64_t fh, const void *buf,
			 size_t size, off_t offset);
	/* Called on every close(2) of a descriptor of fh (may be several);
	 * NULL where a close has nothing to do or report (ponyfs). */
	int (*flush)(struct vfs *fs, uint64_t ino, uint64_t fh);
	int (*fsync)(struct vfs *fs, uint64_t ino, uint64_t fh, bool datasync);
	/* The last close: fh is invalid afterwards. */
	int (*release)(struct vfs *fs, uint64_t ino, uint64_t fh);
	/* fallocate(2) mode and range. */
	int (*fallocate)(struct vfs *fs, uint64_t ino, uint64_t fh, int mode,
			 off_t offset, off_t length);

	/* -- directories ------------------------------------------------------ */
	int (*opendir)(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t ino,
		       uint64_t *ret_fh);
	/*
	 * Calls fill for each entry after `cookie` (0: from the start, "." and
	 * ".." included). Cookies are stable 64-bit values below 2^63: an entry
	 * keeps its cookie while the directory is open (telldir/seekdir work),
	 * and entries added or removed meanwhile never make another entry be
	 * returned twice or skipped. Returns 0 (at the end, or when fill said
	 * the buffer is full) or -errno. An instance may accept VFS_NO_FH (no
	 * opendir at all) and say so in its documentation.
	 */
	int (*readdir)(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t ino,
		       uint64_t fh, uint64_t cookie, vfs_filldir_t fill, void *data);
	/*
	 * readdir with each entry's attributes, as lookup() would give them, in
	 * one pass (FUSE's READDIRPLUS). NULL: the caller looks entries up.
	 */
	int (*readdirplus)(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t ino,
			   uint64_t fh, uint64_t cookie, vfs_filldirplus_t fill, void *data);
	int (*releasedir)(struct vfs *fs, uint64_t ino, uint64_t fh);
	int (*fsyncdir)(struct vfs *fs, uint64_t ino, uint64_t fh, bool datasync);

	/* -- extended attributes (as getxattr(2) & co.) ----------------------- */
	/* size 0: returns the value's size; else copies it: size or -ERANGE. */
	int (*getxattr)(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t ino,
			const char *name, void *buf, size_t size);
	int (*setxattr)(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t ino,
			const char *name, const void *value, size_t size, int flags);
	/* NUL-separated names; size 0 returns the size needed. */
	int (*listxattr)(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t ino,
			 char *buf, size_t size);
	int (*removexattr)(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t ino,
			   const char *name);

	/* -- the filesystem as a whole ---------------------------------------- */
	int (*statfs)(struct vfs *fs, uint64_t ino, struct statvfs *ret);
	/* syncfs(2): everything written so far is durable on return. */
	int (*syncfs)(struct vfs *fs);

	/* -- pony's additions ------------------------------------------------- */
	/*
	 * fbarrier: the file's data written so far reaches the disk before any
	 * metadata change made after this call, without waiting for it now.
	 */
	int (*barrier)(struct vfs *fs, uint64_t ino, uint64_t fh);
	/*
	 * Where the bytes of [offset, offset+length) live: fills up to n extents
	 * and returns how many it filled (fewer than n: the range is covered).
	 * layout_map (version 8) is the richer answer: states, checksums, pieces.
	 */
	int (*layout)(struct vfs *fs, uint64_t ino, uint64_t offset, uint64_t length,
		      struct vfs_extent *ret, size_t n);

	/* -- file handles (name_to_handle_at / open_by_handle_at) ------------- */
	/*
	 * A handle naming ino for as long as the file exists: up to size bytes
	 * in buf, its type in *ret_type and the filesystem's uuid (zeros when
	 * unknown) in uuid. Returns the length; -EOVERFLOW when size is short.
	 */
	int (*encode_fh)(struct vfs *fs, uint64_t ino, void *buf, size_t size, int *ret_type,
			 uint8_t uuid[16]);
	/*
	 * The inode a handle of this filesystem names (uuid all zeros: not
	 * checked): a reference on ret->ino and its attributes. -ESTALE when
	 * the file is gone or the handle is another filesystem's.
	 */
	int (*decode_fh)(struct vfs *fs, const uint8_t uuid[16], const void *buf, size_t len,
			 int type, struct vfs_entry *ret);
	/*
	 * A power cut on purpose (XFS_IOC_GOINGDOWN): from now on nothing more
	 * reaches the disk, not even at unmount, and every later call fails
	 * with -EIO. The next mount finds the last committed state. With
	 * VFS_SHUTDOWN_FLUSH, everything written so far is committed first
	 * (godown -f: XFS flushes its log).
	 */
	int (*shutdown)(struct vfs *fs, unsigned flags);
	/*
	 * The instance's work counters as "name value\n" lines in buf (for
	 * tests and tools to prove what a call did). Returns the length of
	 * the whole text, which may exceed size (then buf holds a prefix).
	 */
	int (*counters)(struct vfs *fs, char *buf, size_t size);
	/*
	 * A host descriptor with an open file's data at the same offsets, for
	 * reads without a copy through the caller (the FUSE front end splices
	 * from it); borrowed, valid until fh is released. -EOPNOTSUPP where
	 * the data is no host file's.
	 */
	int (*data_fd)(struct vfs *fs, uint64_t ino, uint64_t fh);
	/*
	 * Whether fh's data_fd is the host file every open of ino gets while
	 * fh is open: false where a later opener may be given another one (a
	 * union's lower file, which an open for writing copies up). The FUSE
	 * front end passes the kernel through only to files where it holds,
	 * since the kernel binds one host file to an inode for all its opens.
	 * NULL: it always holds.
	 */
	bool (*data_fd_stable)(struct vfs *fs, uint64_t ino, uint64_t fh);
	/*
	 * forget() of n ids at once (FUSE's BATCH_FORGET: thousands after an
	 * rm -rf), so an instance that locks takes its lock once for all.
	 * NULL: forget() each; callers go through vfs_forget_many().
	 */
	void (*forget_multi)(struct vfs *fs, const struct vfs_forget *items, size_t n);

	/* -- encryption: fscrypt's policy v2 model (docs/crypt.md) ------------ */
	/*
	 * Sets a policy (CRYPT_POLICY_SIZE bytes: struct fscrypt_policy_v2) on
	 * the directory ino: -ENOTEMPTY when it has entries, -EEXIST when it
	 * has another policy (the same one again is 0), -ENOTDIR, -EINVAL for
	 * a policy pony cannot honour, -ENOKEY when its key was not added
	 * by ctx's user (root may set any, a key not added yet included, as
	 * Linux lets CAP_FOWNER).
	 */
	int (*set_policy)(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t ino,
			  const void *policy, size_t len);
	/* ino's policy into buf (size >= CRYPT_POLICY_SIZE): its length;
	 * -ENODATA when ino is not encrypted. */
	int (*get_policy)(struct vfs *fs, uint64_t ino, void *buf, size_t size);
	/* ino's 16-byte nonce (FS_IOC_GET_ENCRYPTION_NONCE); -ENODATA. */
	int (*get_nonce)(struct vfs *fs, uint64_t ino, uint8_t nonce[16]);
	/* Adds a master key (64 bytes, else -EINVAL) as ctx->uid's claim; its
	 * identifier in id. Adding it again adds only the claim. inval (no
	 * lock held; NULL: none) is told the inodes and no-key names under
	 * it, which the kernel may cache from before and which now show as
	 * plaintext. */
	int (*add_key)(struct vfs *fs, const struct vfs_ctx *ctx, const void *key, size_t len,
		       uint8_t id[16], const struct vfs_inval *inval);
	/*
	 * Drops ctx->uid's claim on key id (every claim with
	 * VFS_KEY_ALL_USERS); the key goes with the last. Before it goes,
	 * inval (called with no lock held) is told every inode and entry
	 * under the key, so a front end drops what its kernel caches, then
	 * every plaintext the instance holds is written back and dropped.
	 * Files still open keep it "incompletely removed" until closed
	 * (*ret_flags VFS_KEY_FILES_BUSY), or with VFS_KEY_FORCE lose it too
	 * (their calls fail with -ENOKEY). VFS_KEY_OTHER_USERS: only this
	 * user's claim went. -ENOKEY: no such key or claim (an incompletely
	 * removed key has none: any caller may retry its removal).
	 */
	int (*remove_key)(struct vfs *fs, const struct vfs_ctx *ctx, const uint8_t id[16],
			  unsigned flags, const struct vfs_inval *inval, unsigned *ret_flags);
	int (*key_status)(struct vfs *fs, const struct vfs_ctx *ctx, const uint8_t id[16],
			  struct vfs_key_status *ret);
	/* The salt of passphrase keys (16 bytes), made and kept on first ask. */
	int (*crypt_salt)(struct vfs *fs, uint8_t salt[16]);

	/* -- layouts: where every byte of a file lives (docs/layout.md) ------ */
	/*
	 * The extents of ino's [l->offset, l->offset + l->length) into l's
	 * arrays, as many whole extents as fit; -EISDIR for a directory,
	 * -EINVAL for another non-file, -ENOBUFS when not even one extent
	 * fits.
	 */
	int (*layout_map)(struct vfs *fs, uint64_t ino, struct vfs_layout *l);
	/* The volume under the data region; -ENODEV when it is no volume's. */
	int (*layout_topology)(struct vfs *fs, struct vfs_layout_topology *ret);
	/*
	 * A layout lease's state (version 9): VFS_LEASE_STATUS answers it,
	 * VFS_LEASE_RETURN answers it and ends the lease. An unknown lease
	 * (never given, returned, expired) is VFS_LEASE_EXPIRED, not an error.
	 */
	int (*layout_lease)(struct vfs *fs, uint32_t lease, unsigned op, uint32_t *ret_state,
			    uint64_t *ret_ms);
	/*
	 * Who hears of recalls (version 9): fn(arg, lease) once when a lease
	 * turns RECALLED. It runs under the instance's lock: it must not
	 * block or call the instance (queue the news). fn NULL: nobody.
	 */
	void (*layout_recall_watch)(struct vfs *fs, void (*fn)(void *arg, uint32_t lease),
				    void *arg);

	/*
	 * Direct writes (version 10). layout_write: fresh whole stripes for
	 * w's range of ino, open for writing as fh, under a write lease
	 * (-EBADF: fh is not open for writing; -EACCES: the file is
	 * encrypted; -EOPNOTSUPP: not on a volume; -ESTALE: the lease is
	 * gone). layout_commit: a page of extents and checksums onto the
	 * lease; the LAST page makes all of them the file's content and size
	 * in one transaction and ends the lease (-ESTALE: the lease expired,
	 * nothing changed; -EPERM: an extent names stripes the lease was not
	 * given).
	 */
	int (*layout_write)(struct vfs *fs, uint64_t ino, uint64_t fh, struct vfs_layout_write *w);
	int (*layout_commit)(struct vfs *fs, uint64_t ino, uint64_t fh,
			     const struct vfs_layout_commit *c);

	/* -- bad blocks and scrub (version 9, docs/scrub.md) ------------------ */
	/* What lives at r's address (in: flags, volume_offset or member and
	 * member_offset). -ERANGE: outside the volume; -EOPNOTSUPP. */
	int (*resolve)(struct vfs *fs, struct vfs_resolve *r);
	/* Known bad region number index (from 0); -ENOENT past the last. */
	int (*badblock)(struct vfs *fs, uint32_t index, struct vfs_badblock *ret);
	/* Starts, stops or asks about the passive scrub. */
	int (*scrub)(struct vfs *fs, struct vfs_scrub *s);

	/* -- reads without a copy (version 11) ------------------------------ */
	/*
	 * read() whose answer may lie partly in the instance's own buffers
	 * (ponyfs: a stream's, already checked) instead of being copied into
	 * buf: on n >= 0, iov[0 .. *ret_niov) (at most VFS_READ_IOV_MAX) hold
	 * the n bytes in order, each piece in buf or in memory the instance
	 * keeps unchanged until read_release(fs, *ret_hold), which the caller
	 * must call once it has written the answer (*ret_hold NULL: nothing to
	 * release). On -errno nothing is held. NULL: read() into buf.
	 */
	ssize_t (*read_iov)(struct vfs *fs, uint64_t ino, uint64_t fh, void *buf, size_t size,
			    off_t offset, struct iovec *iov, unsigned *ret_niov, void **ret_hold);
	void (*read_release)(struct vfs *fs, void *hold);
};
#define VFS_READ_IOV_MAX 17u

/* The instance header: every instance embeds it first. */
struct vfs {
	const struct vfs_ops *ops;
};

/* Frees fs through its destroy hook; NULL does nothing. */
void vfs_free(struct vfs *fs);
static inline void vfs_freep(struct vfs **fs) { vfs_free(*fs); }

/* The caller's context for direct use: this process's ids and umask 022. */
void vfs_ctx_self(struct vfs_ctx *ret);

/* 0 when name is a valid single component, else -EINVAL / -ENAMETOOLONG. */
int vfs_check_name(const char *name);

/* Drops the references of n ids: forget_multi, or forget() of each. */
void vfs_forget_many(struct vfs *fs, const struct vfs_forget *items, size_t n);

/* DT_* type of a mode (S_IFREG -> DT_REG). */
unsigned vfs_mode_to_dt(mode_t mode);

/*
 * Calls a hook or returns -EOPNOTSUPP for a NULL one, so callers never test.
 * e.g. r = VFS_CALL(fs, lookup, &ctx, VFS_ROOT_INO, "a", &e);
 */
#define VFS_CALL(fs, hook, ...) \
	((fs)->ops->hook ? (fs)->ops->hook((fs), ##__VA_ARGS__) : -EOPNOTSUPP)
#define VFS_FORGET(fs, ino, n) \
	do { if ((fs)->ops->forget) (fs)->ops->forget((fs), (ino), (n)); } while (0)

/*
 * Path helpers for tests and tools: walk a '/'-separated path from root
 * (one reference on the result, forget it; "" or "/" is the root, unreferenced).
 */
int vfs_walk(struct vfs *fs, const struct vfs_ctx *ctx, const char *path,
	     struct vfs_entry *ret);

#endif
