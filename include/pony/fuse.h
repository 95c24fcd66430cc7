/*
 * include/pony/fuse.h - the FUSE front end: exports any vfs instance
 * (include/pony/vfs.h) through libfuse3's low-level API, multithreaded, with
 * readdirplus, and offers as ioctls on the mount what FUSE does not carry.
 */
#ifndef PONY_FUSE_H
#define PONY_FUSE_H

#include <linux/ioctl.h>
#include <linux/fscrypt.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "pony/vfs.h"

struct ponyfuse_options {
	const char *fsname;             /* shown by df and mount: the source */
	const char *subtype;            /* "pony-union" -> type fuse.pony-union; "": none */
	const char *mount_opts;         /* more -o options for libfuse (mount.fuse's), or NULL */
	bool foreground;                /* false: daemonize once mounted */
	bool writeback;                 /* kernel writeback cache: only where safe */
	bool posix_acl;                 /* kernel enforces system.posix_acl_* (the fs keeps modes) */
	bool debug;                     /* libfuse's request log on stderr */
	double timeout;                 /* entry and attribute cache, seconds */
	unsigned max_threads;           /* 0: libfuse's default */
	bool reread_on_open;            /* no page cache or listing kept across
					 * opens: every open's reads reach the
					 * instance (ponyfs -o strictatime) */
	bool noflush;                   /* no FLUSH on close(2): the instance's
					 * flush does nothing a close needs */
	bool export_support;            /* the instance's lookup answers "." and ".."
					 * of any id it ever handed out, forgotten or
					 * not (ponyfs): file handles then outlive the
					 * kernel's inode cache (open_by_handle_at) */
	bool no_opendir;                /* the instance's readdir takes VFS_NO_FH:
					 * no OPENDIR/RELEASEDIR round trips */
	bool direct_wronly;             /* write-only opens are direct I/O
					 * (FOPEN_DIRECT_IO): a write reaches the
					 * instance without the page cache, and
					 * the kernel asks no security.capability
					 * before the first (file_remove_privs):
					 * the front end drops it instead. Not
					 * with writeback or passthrough */
	bool killpriv;                  /* the daemon drops suid/sgid on write,
					 * truncate, chown (KILLPRIV_V2): no
					 * GETATTR before each chown */
	bool no_selinux_xattr;          /* EOPNOTSUPP for security.selinux: the
					 * host runs no SELinux, labels are inert */
	bool no_passthrough;            /* no FUSE passthrough: by default files
					 * whose data is a host file (vfs data_fd)
					 * are read and written by the kernel
					 * directly, where it offers passthrough
					 * (6.9+, root, no writeback cache);
					 * elsewhere, and for instances without
					 * data_fd, it silently does not happen */
	bool io_uring;                  /* serve requests over FUSE-over-io_uring
					 * rings, one per CPU, where the kernel
					 * offers it (6.14+ with the fuse module's
					 * enable_uring on: ponyfuse_uring_enable);
					 * elsewhere silently over /dev/fuse. The
					 * instance then gets requests from one
					 * thread per CPU at once, whatever
					 * max_threads says */
	/* Called once the mount serves (after daemonizing, which keeps only
	 * the calling thread, so services with threads start here); a
	 * failure stops the mount with it. NULL: nothing. */
	int (*serving)(void *arg);
	void *serving_arg;
};

struct ponyfuse;

/*
 * Mounts fs at mountpoint. On 0, *ret is the caller's (ponyfuse_free()), fs
 * stays the caller's and must outlive it. -ENOTCONN when /dev/fuse or the
 * mount is refused, -EINVAL for options libfuse does not know.
 */
int ponyfuse_mount(struct vfs *fs, const char *mountpoint,
		   const struct ponyfuse_options *opts, struct ponyfuse **ret);

/*
 * Daemonizes unless opts->foreground, then serves requests until the mount
 * goes away or SIGINT/SIGTERM/SIGHUP arrives. Returns 0 or -errno.
 */
int ponyfuse_run(struct ponyfuse *pf);

/*
 * The fuse module's enable_uring parameter, which gates FUSE over io_uring
 * for every new mount of the machine: 1 on, 0 off, -ENOENT when the kernel
 * has no such parameter. Enabling it (root only) is the caller's explicit
 * choice; the front end never changes it by itself.
 */
int ponyfuse_uring_param(void);
int ponyfuse_uring_enable(void);

/*
 * pony's transports (its /dev/fuse hooks and, with opts->io_uring, the
 * io_uring rings) for a daemon written on libfuse's low-level API itself
 * rather than a vfs instance (bench/src/fuse_floor.c): make the session with
 * the handle from ponyfuse_transport_new() as its userdata, mount it, attach
 * it. Its handlers must then take requests from several threads at once.
 * After the loop and fuse_session_unmount(), ponyfuse_free() stops the rings;
 * then fuse_session_destroy(). -ENOMEM, -EIO.
 */
struct fuse_session;
int ponyfuse_transport_new(const struct ponyfuse_options *opts, struct ponyfuse **ret);
int ponyfuse_transport_attach(struct ponyfuse *pf, struct fuse_session *se);

/*
 * SIGINT, SIGTERM and SIGHUP end se's serving loop whichever of the
 * process's threads the kernel hands them to (src/fuse/stop.c); SIGPIPE is
 * ignored. ponyfuse_mount() does this itself; a daemon on libfuse's
 * high-level API (pony vol expose) calls it in place of
 * fuse_set_signal_handlers(): before the mount appears, in the thread that
 * will run the loop. Release puts the defaults back. One session per
 * process. -errno from sigaction.
 */
int ponyfuse_stop_signals_catch(struct fuse_session *se);
void ponyfuse_stop_signals_release(void);

/* Unmounts (if still mounted) and frees; NULL does nothing. */
void ponyfuse_free(struct ponyfuse *pf);

/*
 * ioctls on any file or directory of a pony mount. FUSE sends a plain GETATTR
 * for statx(2) and nothing at all for syncfs(2); these carry them.
 */
struct ponyfuse_statx_arg {
	uint32_t mask;                  /* in: STATX_* wanted */
	uint32_t flags;                 /* in: AT_STATX_* (DONT_SYNC, FORCE_SYNC) */
	struct statx stx;               /* out */
};
#define PONYFUSE_IOC_STATX _IOWR('P', 1, struct ponyfuse_statx_arg)
#define PONYFUSE_IOC_SYNCFS _IO('P', 2)
/* fbarrier of the file the ioctl is made on (pony barrier FILE). */
#define PONYFUSE_IOC_BARRIER _IO('P', 3)
/* The instance's counters as text ("name value\n" lines, NUL-terminated). */
struct ponyfuse_counters_arg {
	char text[1024];
};
#define PONYFUSE_IOC_COUNTERS _IOR('P', 4, struct ponyfuse_counters_arg)
/*
 * The front end's own, the same way: passthrough (1 when in use),
 * passthrough_opens, passthrough_backing_files (registered now), then
 * "fuse_<request> N" for each kind of FUSE request read so far (fuse_read,
 * fuse_lookup..., this ioctl's own included).
 */
#define PONYFUSE_IOC_REQUESTS _IOR('P', 5, struct ponyfuse_counters_arg)
/*
 * XFS_IOC_GOINGDOWN, which fstests' godown sends to the mount's root: a
 * power cut (vfs shutdown hook), root only. Its argument points to XFS's
 * flags word; XFS declares it _IOR, so FUSE does not carry it in and the
 * front end reads it from the caller. NOLOGFLUSH (and an unreadable word):
 * the cut alone; DEFAULT and LOGFLUSH: commit what was written, then cut.
 */
#define PONYFUSE_IOC_GOINGDOWN _IOR('X', 125, uint32_t)
enum {
	PONYFUSE_GOINGDOWN_DEFAULT = 0,         /* XFS: flush data and log */
	PONYFUSE_GOINGDOWN_LOGFLUSH = 1,        /* XFS: flush the log only */
	PONYFUSE_GOINGDOWN_NOLOGFLUSH = 2,      /* XFS: flush nothing */
};

/*
 * Encryption (docs/crypt.md). Linux's own fscrypt ioctls (linux/fscrypt.h:
 * FS_IOC_SET_ENCRYPTION_POLICY, _GET_ENCRYPTION_POLICY_EX,
 * _ADD_ENCRYPTION_KEY, _REMOVE_ENCRYPTION_KEY(_ALL_USERS),
 * _GET_ENCRYPTION_KEY_STATUS, _GET_ENCRYPTION_NONCE) are answered with
 * Linux's numbers, structures and errors; these two are pony's own.
 */
/* The salt passphrase keys are derived with (scrypt), made on first ask. */
#define PONYFUSE_IOC_CRYPT_SALT _IOR('P', 6, uint8_t[16])
/* FS_IOC_REMOVE_ENCRYPTION_KEY's argument (struct fscrypt_remove_key_arg),
 * plus force: files still open lose the key too (they fail with ENOKEY). */
#define PONYFUSE_IOC_REMOVE_KEY_FORCE _IOWR('P', 7, struct fscrypt_remove_key_arg)

/*
 * Layouts (docs/layout.md, field by field): where a file's bytes live.
 * PONYFUSE_IOC_LAYOUT on a regular file answers the extents of
 * [offset, offset + length), as many as the fixed arrays hold (FUSE's
 * restricted ioctls carry only _IOC_SIZE bytes); the caller asks again
 * from `next` until PONYFUSE_LAYOUT_COMPLETE. Native byte order (a local
 * ioctl). version: the caller sets PONYFUSE_LAYOUT_VERSION, the daemon
 * answers with its own; an unknown version is EPROTONOSUPPORT. The
 * structures only ever grow into their reserved fields; a new shape gets
 * a new ioctl number (_IOC_SIZE is part of it).
 */
#define PONYFUSE_LAYOUT_VERSION 1
#define PONYFUSE_LAYOUT_EXTENTS 32
#define PONYFUSE_LAYOUT_CSUMS 1024
#define PONYFUSE_LAYOUT_PIECES 256
enum {                                  /* ponyfuse_layout_extent.state */
	PONYFUSE_LAYOUT_DATA = 0,       /* written: read it from the pieces, check the CRC32Cs */
	PONYFUSE_LAYOUT_UNWRITTEN = 1,  /* allocated, never written: reads as zeros */
	PONYFUSE_LAYOUT_HOLE = 2,       /* nothing allocated: reads as zeros */
	PONYFUSE_LAYOUT_DIRTY = 3,      /* cached in the daemon, not on disk: read the mount */
};
enum {                                  /* ponyfuse_layout_arg.flags */
	PONYFUSE_LAYOUT_ENCRYPTED = 1 << 0,     /* ciphertext on disk: direct readers refuse */
	PONYFUSE_LAYOUT_ON_VOLUME = 1 << 1,     /* pieces name volume members */
	PONYFUSE_LAYOUT_COMPLETE = 1 << 2,      /* the range is covered */
};
enum {                                  /* ponyfuse_layout_piece.role */
	PONYFUSE_PIECE_DATA = 0, PONYFUSE_PIECE_COPY = 1, PONYFUSE_PIECE_P = 2, PONYFUSE_PIECE_Q = 3,
};
#define PONYFUSE_LAYOUT_NO_OFFSET UINT64_MAX
struct ponyfuse_layout_extent {
	uint64_t file_offset;
	uint64_t length;                /* whole blocks */
	uint64_t volume_offset;         /* in the data region; PONYFUSE_LAYOUT_NO_OFFSET: none */
	uint32_t state;                 /* PONYFUSE_LAYOUT_DATA... */
	uint32_t first_csum;            /* DATA: csums[first_csum...], one per block */
	uint32_t first_piece;           /* pieces[first_piece...] */
	uint32_t npieces;
};
struct ponyfuse_layout_piece {
	uint64_t file_offset;           /* the file bytes it holds (P, Q: their data piece's) */
	uint64_t length;
	uint64_t member_offset;         /* byte offset on the member's device (dd skip=) */
	uint32_t member;                /* index for PONYFUSE_IOC_LAYOUT_MEMBER */
	uint32_t role;                  /* PONYFUSE_PIECE_* */
};
struct ponyfuse_layout_arg {
	uint32_t version;               /* in and out */
	uint32_t flags;                 /* out: PONYFUSE_LAYOUT_ENCRYPTED... */
	uint64_t offset;                /* in: where this call starts */
	uint64_t length;                /* in: bytes of the range from offset */
	uint64_t size;                  /* out: the file's size */
	uint64_t next;                  /* out: offset for the next call (unless COMPLETE) */
	uint32_t block_size;            /* out: bytes a checksum covers */
	uint32_t nextents, ncsums, npieces;     /* out */
	uint32_t lease;                 /* in: 0 none, PONYFUSE_LEASE_NEW, or a lease to add to; out: the lease */
	uint32_t lease_ms;              /* out: milliseconds the lease holds from now (0: no lease) */
	struct ponyfuse_layout_extent extents[PONYFUSE_LAYOUT_EXTENTS];
	uint32_t csums[PONYFUSE_LAYOUT_CSUMS];  /* CRC32C of each block as stored */
	struct ponyfuse_layout_piece pieces[PONYFUSE_LAYOUT_PIECES];
};
_Static_assert(sizeof(struct ponyfuse_layout_arg) == 64 + 32 * 40 + 1024 * 4 + 256 * 32,
	       "ponyfuse_layout_arg's size is its ABI");
#define PONYFUSE_IOC_LAYOUT _IOWR('P', 32, struct ponyfuse_layout_arg)
/*
 * A vfs layout page (its arrays no longer than a's) copied into the
 * ioctl's struct, csums excepted (a's own array when the page was got for
 * the ioctl): the ioctl and libpony-layout's TCP client share it.
 */
void ponyfuse_layout_arg_from_vfs(const struct vfs_layout *l, struct ponyfuse_layout_arg *a);

/*
 * Layout leases (docs/layout.md "Leases"). A layout got with `lease` set
 * is a lease: until it is returned or expires, ponyfs neither frees nor
 * reuses a block it names (an overwrite, truncate or punch through the
 * mount writes elsewhere and recalls the lease). A holder reads, then asks
 * STATUS: HELD means every byte it read was the file's at the layout's
 * moment; EXPIRED (or an unknown lease) means it must get a new layout and
 * read again. RETURN ends the lease.
 */
#define PONYFUSE_LEASE_NEW UINT32_MAX
enum {                                  /* ponyfuse_layout_lease_arg.op */
	PONYFUSE_LEASE_STATUS = 0, PONYFUSE_LEASE_RETURN = 1,
};
enum {                                  /* ponyfuse_layout_lease_arg.state */
	PONYFUSE_LEASE_HELD = 0,        /* the layout's blocks are as they were */
	PONYFUSE_LEASE_RECALLED = 1,    /* still held, but the file changed: return it soon */
	PONYFUSE_LEASE_EXPIRED = 2,     /* gone (expired, returned or never given) */
};
struct ponyfuse_layout_lease_arg {
	uint32_t version;               /* in and out: PONYFUSE_LAYOUT_VERSION */
	uint32_t lease;                 /* in */
	uint32_t op;                    /* in: PONYFUSE_LEASE_STATUS or _RETURN */
	uint32_t state;                 /* out: PONYFUSE_LEASE_HELD... (before a RETURN) */
	uint64_t lease_ms;              /* out: milliseconds left (0: none) */
};
_Static_assert(sizeof(struct ponyfuse_layout_lease_arg) == 24,
	       "ponyfuse_layout_lease_arg's size is its ABI");
#define PONYFUSE_IOC_LAYOUT_LEASE _IOWR('P', 34, struct ponyfuse_layout_lease_arg)
/* The volume under the data region and its member `index` (ENODEV: no volume). */
struct ponyfuse_layout_member_arg {
	uint32_t version;               /* in and out */
	uint32_t index;                 /* in: the member */
	uint32_t nmembers;              /* out: the rest describe the volume, then the member */
	uint32_t state;                 /* 0 working, 1 failed, 2 rebuilding */
	uint64_t chunk;                 /* bytes; 0: none */
	uint64_t full_stripe;           /* bytes */
	uint64_t region_offset;         /* the data region's first byte in the volume */
	char level[16];                 /* "raid6", NUL-terminated */
	char layout[24];                /* md layout ("left-symmetric"); "": none */
	uint32_t has_uuid;              /* uuid is the member's superblock UUID */
	uint32_t reserved;
	uint8_t uuid[16];
	char device[256];               /* as the mount opened it; "": missing */
};
_Static_assert(sizeof(struct ponyfuse_layout_member_arg) == 360,
	       "ponyfuse_layout_member_arg's size is its ABI");
#define PONYFUSE_IOC_LAYOUT_MEMBER _IOWR('P', 33, struct ponyfuse_layout_member_arg)

/*
 * Direct writes (docs/layout.md "Direct writes"). PONYFUSE_IOC_LAYOUT_WRITE,
 * on a file open for writing, hands out fresh whole stripes of the data
 * region for [offset, offset + length) under a write lease (`lease`:
 * PONYFUSE_LEASE_NEW, then the lease answered), at most as many as the
 * pieces array holds: `granted` says how much; ask again from offset +
 * granted. Nothing is recorded: the stripes are free until a commit. The
 * writer puts data and parity (volume_encode_stripe()) on the members,
 * then sends PONYFUSE_IOC_LAYOUT_COMMIT pages of (file offset, length,
 * volume offset) extents with every block's CRC32C; the page with
 * PONYFUSE_COMMIT_LAST makes all of them the file's content and its size
 * `size` in one transaction, and ends the lease. ESTALE: the lease expired
 * or was revoked (nothing changed); EPERM: an extent names stripes the
 * lease was not given.
 */
#define PONYFUSE_COMMIT_EXTENTS 32
#define PONYFUSE_COMMIT_CSUMS 3072
struct ponyfuse_layout_write_arg {
	uint32_t version;               /* in and out */
	uint32_t npieces;               /* out: entries of pieces filled */
	uint64_t offset;                /* in: file offset, whole blocks */
	uint64_t length;                /* in: bytes wanted from offset */
	uint64_t volume_offset;         /* out: the granted stripes' first byte in the data region */
	uint64_t granted;               /* out: bytes granted from offset (whole stripes) */
	uint64_t stripe;                /* out: bytes of a whole stripe */
	uint32_t lease;                 /* in: PONYFUSE_LEASE_NEW or the write lease; out: it */
	uint32_t lease_ms;              /* out: milliseconds the lease holds from now */
	uint32_t block_size;            /* out */
	uint32_t reserved;
	struct ponyfuse_layout_piece pieces[PONYFUSE_LAYOUT_PIECES];  /* file offsets as granted */
};
_Static_assert(sizeof(struct ponyfuse_layout_write_arg) == 64 + 256 * 32,
	       "ponyfuse_layout_write_arg's size is its ABI");
#define PONYFUSE_IOC_LAYOUT_WRITE _IOWR('P', 35, struct ponyfuse_layout_write_arg)

enum { PONYFUSE_COMMIT_LAST = 1 << 0 };         /* ponyfuse_layout_commit_arg.flags */
struct ponyfuse_layout_commit_extent {
	uint64_t file_offset;           /* whole blocks */
	uint64_t length;                /* whole blocks */
	uint64_t volume_offset;         /* in the data region, inside the lease's stripes */
};
struct ponyfuse_layout_commit_arg {
	uint32_t version;               /* in and out */
	uint32_t flags;                 /* in: PONYFUSE_COMMIT_LAST */
	uint32_t lease;                 /* in: the write lease */
	uint32_t nextents;              /* in */
	uint32_t ncsums;                /* in: blocks of the extents, in order */
	uint32_t reserved;
	uint64_t size;                  /* in, LAST: the file's size after */
	struct ponyfuse_layout_commit_extent extents[PONYFUSE_COMMIT_EXTENTS];
	uint32_t csums[PONYFUSE_COMMIT_CSUMS];  /* CRC32C (seed 0) of each block as written */
};
_Static_assert(sizeof(struct ponyfuse_layout_commit_arg) == 32 + 32 * 24 + 3072 * 4,
	       "ponyfuse_layout_commit_arg's size is its ABI");
#define PONYFUSE_IOC_LAYOUT_COMMIT _IOW('P', 36, struct ponyfuse_layout_commit_arg)

/*
 * Bad blocks and scrub (docs/scrub.md, field by field), on the mount's
 * root (any file of the mount answers the same). RESOLVE: what lives at a
 * volume byte, or at a member's device byte (PONYFUSE_RESOLVE_BY_MEMBER).
 * BADBLOCK: known bad or repaired region number `index`, ENOENT past the
 * last. SCRUB: start, stop or ask about the passive scrub. Each struct is
 * its vfs counterpart (include/pony/vfs.h) field for field, after version.
 */
#define PONYFUSE_SCRUB_VERSION 1
enum { PONYFUSE_RESOLVE_BY_MEMBER = 1 };
struct ponyfuse_resolve_arg {
	uint32_t version;               /* in and out: PONYFUSE_SCRUB_VERSION */
	uint32_t flags;                 /* in */
	uint32_t member;                /* in (BY_MEMBER); out: UINT32_MAX none */
	uint32_t what;                  /* out: 0 free, 1 file, 2 metadata, 3 parity, 4 none */
	uint64_t member_offset;         /* in (BY_MEMBER), out: byte on the member's device */
	uint64_t volume_offset;         /* in (else), out */
	uint32_t role;                  /* out: 0 data, 1 copy, 2 P, 3 Q */
	uint32_t meta;                  /* out: 0 superblock, 1 chunk table, 2 database, 3 WAL, 4 unused */
	uint32_t npaths;                /* out: file: names of the inode */
	uint32_t reserved;
	uint64_t page;                  /* out: metadata: SQLite page or WAL frame, from 1 */
	uint64_t row_length;            /* out: parity: data bytes of the row */
	uint64_t ino, file_offset;      /* out: file */
	uint64_t block;                 /* out: free, file: data-region block */
	char paths[3072];               /* out: file: paths that fit, each NUL-terminated */
};
_Static_assert(sizeof(struct ponyfuse_resolve_arg) == 3160, "ponyfuse_resolve_arg's size is its ABI");
#define PONYFUSE_IOC_RESOLVE _IOWR('P', 40, struct ponyfuse_resolve_arg)
struct ponyfuse_badblock_arg {
	uint32_t version;               /* in and out */
	uint32_t index;                 /* in */
	uint32_t source;                /* out: 0 member log, 1 read, 2 scrub, 3 scrub checksum */
	uint32_t repaired;              /* out: rewritten from redundancy */
	uint64_t length;                /* out: bytes */
	struct ponyfuse_resolve_arg where;      /* out: its first byte */
};
_Static_assert(sizeof(struct ponyfuse_badblock_arg) == 3184, "ponyfuse_badblock_arg's size is its ABI");
#define PONYFUSE_IOC_BADBLOCK _IOWR('P', 41, struct ponyfuse_badblock_arg)
struct ponyfuse_scrub_arg {
	uint32_t version;               /* in and out */
	uint32_t op;                    /* in: 0 status, 1 start, 2 stop */
	uint32_t state;                 /* out: 0 idle, 1 running, 2 stopped, 3 done, 4 failed */
	int32_t error;                  /* out: failed: -errno */
	uint64_t rate;                  /* in (start): bytes per second, 0 no limit; out */
	uint64_t position, total;       /* out: bytes of the pass done, and all */
	uint64_t checked, repaired, lost;       /* out: blocks */
	uint64_t elapsed_ms;            /* out */
	uint64_t yielded_ms;            /* out: of the run, waiting for foreground reads */
};
_Static_assert(sizeof(struct ponyfuse_scrub_arg) == 80, "ponyfuse_scrub_arg's size is its ABI");
#define PONYFUSE_IOC_SCRUB _IOWR('P', 42, struct ponyfuse_scrub_arg)

#endif
