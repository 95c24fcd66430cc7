/*
 * include/pony/layout.h - libpony-layout.so, the direct client of ponyfs
 * layouts (docs/layout.md "The direct reader"): get a file's layout from
 * its mount, read its bytes straight from the volume's members in
 * parallel, checking every block's CRC32C and rebuilding what is missing
 * or bad from the volume's redundancy, and give the layout back.
 *
 *	struct pony_layout *l;
 *	int r = pony_layout_get(fd, 0, UINT64_MAX, &l);      (fd: the file, on the mount)
 *	ssize_t n = pony_layout_read(l, buf, 0, len);         (as pread(2))
 *	pony_layout_return(l);                                (frees l)
 *
 * Errors are negative errno values. A layout is used by one thread at a
 * time. The library never prints; only a direct writer (below) writes to
 * members, and only to the fresh stripes it was handed.
 */
#ifndef PONY_LAYOUT_H
#define PONY_LAYOUT_H

#include <stdint.h>
#include <sys/types.h>

struct pony_layout;                     /* opaque: fields live in src/layout/ */

/*
 * The layout of [off, off+len) of the file open at fd (a regular file of a
 * pony mount, any open mode; len UINT64_MAX: to the end), as a lease when
 * the daemon grants one (a snapshot when it does not). fd stays the
 * caller's; the layout keeps a duplicate. On 0, *ret is the caller's:
 * pony_layout_return() it. -EACCES: the file is encrypted (keys never
 * leave the mount: read it through the mount); -ENOTTY: not on a pony
 * mount; -EISDIR, -EINVAL: not a regular file; -EOPNOTSUPP: the mount's
 * filesystem has no layouts; -EPROTONOSUPPORT: another layout version.
 */
int pony_layout_get(int fd, uint64_t off, uint64_t len, struct pony_layout **ret);
/* The same for a path (opened O_RDONLY); errors of open(2) as -errno. */
int pony_layout_get_path(const char *path, uint64_t off, uint64_t len, struct pony_layout **ret);

/*
 * The same from another host, through the mount's layout service (`pony
 * mount --layout-listen ADDR`, docs/nbd.md): path is the file's from the
 * mount's root. Members the mount names by NBD URIs are read from their
 * servers (an nbds:// URI without a query with psk_file's key); members it
 * names by paths are its host's files, left out here (their blocks are
 * rebuilt from the others, as a missing member's). Data the daemon still
 * caches cannot be read from here: pony_layout_read() says -EAGAIN.
 * -EACCES: a wrong key, or an encrypted file; -ENXIO: the filesystem is on
 * one image, with no members to read; -ECONNREFUSED, -EHOSTUNREACH...: no
 * service at addr; errors of the daemon's lookup of path (-ENOENT...).
 */
struct pony_layout_server {
	const char *addr;               /* "HOST:PORT" or "[V6]:PORT" */
	const char *psk_file;           /* "IDENTITY:HEXKEY" lines; NULL: in the clear */
	unsigned member_timeout_ms;     /* NBD members: connecting, each read; 0: 30 s */
};
int pony_layout_get_remote(const struct pony_layout_server *s, const char *path, uint64_t off,
			   uint64_t len, struct pony_layout **ret);

/* The file's size when the layout was got. */
uint64_t pony_layout_size(const struct pony_layout *l);

/*
 * Reads up to len bytes at file offset off, as pread(2): the count (short
 * only at the end of the file), or -errno. The bytes are those of the file
 * at the layout's moment: data blocks from the members (each checked
 * against its CRC32C and, when a member is missing, a read fails or a
 * block is bad, rebuilt from copies or parity by the volume library),
 * zeros for holes and unwritten ranges, and through the mount what the
 * daemon still holds in its cache. When the lease expired meanwhile (or,
 * without a lease, a block matches no copy, as a block reused since the
 * snapshot would), the layout is got again and the range read again, a
 * few times at most. -EINVAL: the range is outside the layout's; -EIO: a
 * block is lost beyond the volume's redundancy; -ESTALE: the file kept
 * changing under every retry.
 */
ssize_t pony_layout_read(struct pony_layout *l, void *buf, uint64_t off, size_t len);

/* What the reads of l did so far, in bytes (blocks for `rebuilt`). */
struct pony_layout_stats {
	uint64_t member_bytes;          /* read from members and checked */
	uint64_t mount_bytes;           /* read through the mount (dirty, no volume) */
	uint64_t zero_bytes;            /* holes and unwritten ranges */
	uint64_t rebuilt;               /* blocks rebuilt from redundancy */
	uint64_t regets;                /* layouts got again (lease expired, block reused) */
	uint64_t members_refused;       /* members whose device named another member UUID */
};
void pony_layout_stats(const struct pony_layout *l, struct pony_layout_stats *ret);

/*
 * A second reader of l's layout, for another thread: the same extents,
 * checksums and lease (the moment l was got), the members opened again.
 * The clone checks l's lease but never returns it: return the clone before
 * l. A clone that must get the layout again (the lease expired) holds a
 * lease of its own from then on. -EOPNOTSUPP: l was got from another host.
 */
int pony_layout_clone(const struct pony_layout *l, struct pony_layout **ret);

/*
 * Moves l (or a clone) to [off, off+len) of the same file (len UINT64_MAX:
 * to the end): its extents, checksums and pieces got again for that range
 * alone, joined to the lease l holds (which the join renews), the members
 * kept open; a no-op when l's range covers it already. A reader that
 * reads a large file a window at a time gets each window's layout just
 * before reading it, instead of the whole file's before its first read.
 * Each window's bytes are the file's at the moment it was got. Errors as
 * pony_layout_get(); -ESTALE: the file kept changing. Since PONY_LAYOUT_3.
 */
int pony_layout_seek(struct pony_layout *l, uint64_t off, uint64_t len);

/* Returns the lease (if any) to the daemon and frees l. NULL: does nothing. */
int pony_layout_return(struct pony_layout *l);

/*
 * Direct writes (docs/layout.md "Direct writes"): a file's new bytes
 * written straight to the volume's members, data and parity, into fresh
 * whole stripes the daemon hands out under a write lease, and made the
 * file's content by one commit: until then the file is as it was, and
 * after a crash it is all old or all new.
 *
 *	struct pony_layout_writer *w;
 *	int r = pony_layout_write_open(fd, &w);     (fd: the file, open for writing)
 *	ssize_t n = pony_layout_write(w, buf, 0, len);
 *	r = pony_layout_commit(w, len);             (frees w)
 *
 * The writer opens the members O_WRONLY itself (it needs the right to).
 * -EACCES: the file is encrypted (keys never leave the mount: write it
 * through the mount); -EBADF: fd is not open for writing; -EOPNOTSUPP:
 * the mount's data region is not on a volume, or has no layouts.
 */
struct pony_layout_writer;
int pony_layout_write_open(int fd, struct pony_layout_writer **ret);
/*
 * Writes len bytes of buf at file offset off (a multiple of 4096; a write
 * that is not a multiple of 4096 long must be the last) to fresh stripes:
 * len, or -errno. Not visible through the mount until committed; each
 * file range is written once (the commit refuses overlaps: -EINVAL).
 * -ESTALE: the write lease expired or was revoked (start again: nothing
 * changed).
 */
ssize_t pony_layout_write(struct pony_layout_writer *w, const void *buf, uint64_t off, size_t len);
/*
 * Flushes the members written, then makes every range written the file's
 * content and size its size, in one transaction; the file's old blocks
 * there are freed. Frees w. -ESTALE: the lease expired first and nothing
 * changed; -EPERM: the daemon refused stripes it did not hand out.
 */
int pony_layout_commit(struct pony_layout_writer *w, uint64_t size);
/* Gives the write lease back uncommitted (nothing changes) and frees w. */
void pony_layout_write_abort(struct pony_layout_writer *w);

#endif
