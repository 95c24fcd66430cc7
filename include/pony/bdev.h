/*
 * include/pony/bdev.h - pony's block devices: one interface (read, write,
 * flush, discard, size) over several backends: a file or block device,
 * memory (tests), fault injection (errors at chosen offsets or after N I/Os,
 * latency, vanishing, torn writes) and record (a dm-log-writes log of every
 * write and flush, for crash testing), and an NBD client (an export on
 * another machine, through libnbd). A volume is a bdev too, so volumes
 * stack.
 *
 * Offsets and lengths are bytes. A call covers its whole range or fails:
 * 0 or a negative errno, never a short count. Ranges past the end are
 * -EINVAL. Calls on one bdev may come from several threads.
 */
#ifndef PONY_BDEV_H
#define PONY_BDEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bdev;
struct bdev_io;
struct acall_ring;

/* A backend. Hooks see only ranges already checked against the size. */
/* What a reader says of a range ahead of time: see bdev_advise(). */
enum bdev_advice {
	BDEV_WILLNEED,          /* read soon: fetch it into the host's cache now */
	BDEV_DONTNEED,          /* read and done with: the host's cache may drop it */
};

struct bdev_ops {
	const char *name;
	int (*pread)(struct bdev *b, void *buf, size_t len, uint64_t off);
	int (*pwrite)(struct bdev *b, const void *buf, size_t len, uint64_t off);
	int (*flush)(struct bdev *b);                                /* NULL: nothing to do */
	int (*discard)(struct bdev *b, uint64_t off, uint64_t len);  /* NULL: -EOPNOTSUPP */
	void (*free)(struct bdev *b);
	/* Asynchronous path (appended; NULL: bdev_submit completes inline). */
	void (*submit)(struct bdev *b, struct bdev_io *io);
	/*
	 * Storage that is addressable memory (appended; NULL: -EOPNOTSUPP):
	 * see bdev_map(). Backends that must see every write (fault, record,
	 * files) leave it NULL.
	 */
	int (*map)(struct bdev *b, uint64_t off, size_t len, void **ret_ptr);
	/* Redundancy (appended; NULL: plain pread, -EOPNOTSUPP): see
	 * bdev_read_checked() and bdev_repair(). */
	int (*read_checked)(struct bdev *b, void *buf, size_t len, uint64_t off);
	int (*repair)(struct bdev *b, void *buf, size_t len, uint64_t off, uint32_t crc);
	/* A write not worth caching (appended; NULL: pwrite): see bdev_pwrite_direct(). */
	int (*pwrite_direct)(struct bdev *b, const void *buf, size_t len, uint64_t off);
	/* A hint about a range (appended; NULL: nothing): see bdev_advise(). */
	int (*advise)(struct bdev *b, uint64_t off, uint64_t len, enum bdev_advice advice);
	/* A read not worth caching (appended; NULL: pread): see bdev_pread_direct(). */
	int (*pread_direct)(struct bdev *b, void *buf, size_t len, uint64_t off);
};

struct bdev {
	const struct bdev_ops *ops;
	uint64_t size;                  /* bytes */
	unsigned block_size;            /* 512 unless the device says otherwise */
	char name[64];                  /* for messages: a path, "mem", ... */
};

int bdev_pread(struct bdev *b, void *buf, size_t len, uint64_t off);
int bdev_pwrite(struct bdev *b, const void *buf, size_t len, uint64_t off);
int bdev_flush(struct bdev *b);
/*
 * bdev_pwrite() for bulk data the writer will not read back soon (a file
 * system's data blocks): a file backend writes it around the host's page
 * cache (O_DIRECT, no copy, the pages DMA'd from buf) when buf, len and
 * off are BDEV_DIRECT_ALIGN-aligned, and as bdev_pwrite() otherwise. The
 * same durability as bdev_pwrite(): on the device's cache, bdev_flush()
 * makes it stable. Reads see it at once. Backends that must see every
 * write (fault, record) and stacks without the op take it as a pwrite.
 */
#define BDEV_DIRECT_ALIGN 4096u
int bdev_pwrite_direct(struct bdev *b, const void *buf, size_t len, uint64_t off);
/*
 * bdev_pread() of data the host's page cache would only hold twice (an
 * encrypted file's ciphertext, whose plaintext the reader caches): a file
 * backend reads it around the cache (O_DIRECT, DMA'd into buf, no copy,
 * no page cache pages made and dropped) when buf, len and off are
 * BDEV_DIRECT_ALIGN-aligned. Dirty cached pages of the range are written
 * first by the kernel, so it returns what bdev_pread() would. Returns 1
 * when the read went around the cache, 0 when it was a bdev_pread()
 * (unaligned, stacks without the op: fault, record, volumes), or an error.
 */
int bdev_pread_direct(struct bdev *b, void *buf, size_t len, uint64_t off);
int bdev_discard(struct bdev *b, uint64_t off, uint64_t len);
/*
 * A hint about [off, off+len). BDEV_WILLNEED: it will be read soon; a file
 * backend starts reading it into the host's page cache (POSIX_FADV_WILLNEED)
 * and returns without waiting, so a later bdev_pread() of it is a copy, not
 * a wait on the disk. BDEV_DONTNEED: it was read and will not be again
 * soon (a sequential reader's wake); a file backend lets the host's page
 * cache drop it (POSIX_FADV_DONTNEED), so a long stream recycles the same
 * pages instead of filling memory with ones it will never read again.
 * Neither changes what a read returns. Backends without the op, and stacks
 * that do not pass it on (fault, record), do nothing: 0. A volume passes
 * it to the members a read of the range takes (volume/readahead.c).
 */
int bdev_advise(struct bdev *b, uint64_t off, uint64_t len, enum bdev_advice advice);
static inline uint64_t bdev_size(const struct bdev *b) { return b->size; }
void bdev_free(struct bdev *b);         /* NULL: does nothing */
/*
 * Lends the device's own storage for [off, off+len): on 0, *ret_ptr points
 * at it, and loads and stores through it are reads and writes of the
 * device (no flush needed), valid until the bdev is freed. -EOPNOTSUPP
 * when the backend's storage is not memory (files) or when it must see
 * each I/O (fault injection, record): callers then use bdev_pread/pwrite.
 */
int bdev_map(struct bdev *b, uint64_t off, size_t len, void **ret_ptr);
static inline void bdev_freep(struct bdev **b) { bdev_free(*b); }

/*
 * Storage with redundancy (a pony volume, through slices and gates over
 * it). bdev_read_checked() reads checking each row against its redundancy
 * first where the level can name a bad member (raid6), for data with no
 * checksum of its own; elsewhere a plain read. bdev_repair() is for data
 * that failed its own checksum: it finds the copy or reconstruction of
 * [off, off+len) whose CRC32C is crc, leaves it in buf and rewrites the
 * member that was bad. Returns that member's index; -EOPNOTSUPP without
 * redundancy, -EBADMSG when nothing matches crc.
 */
int bdev_read_checked(struct bdev *b, void *buf, size_t len, uint64_t off);
int bdev_repair(struct bdev *b, void *buf, size_t len, uint64_t off, uint32_t crc);

/*
 * [off, off+len) of parent as a bdev of its own (512-byte aligned), every
 * op passed on, redundancy too. With own, freeing the slice frees parent.
 * -EINVAL for a range off parent.
 */
int bdev_slice_new(struct bdev *parent, uint64_t off, uint64_t len, bool own, const char *name,
		   struct bdev **ret);

/*
 * Asynchronous I/O. The request and its buffer stay the caller's until
 * done() runs; result is 0 or -errno. Backends without an asynchronous path
 * complete the request before bdev_submit() returns.
 */
enum bdev_op { BDEV_READ, BDEV_WRITE, BDEV_FLUSH, BDEV_DISCARD };
struct bdev_io {
	enum bdev_op op;
	void *buf;
	size_t len;
	uint64_t off;
	int result;
	void (*done)(struct bdev_io *io);
	void *data;                     /* the caller's */
};
void bdev_submit(struct bdev *b, struct bdev_io *io);

/*
 * The same, with every I/O going through an acall ring (io_uring where the
 * kernel has the op, acall's workers otherwise): synchronous calls wait for
 * their op, bdev_submit() returns at once and done() runs on completion.
 * The ring must outlive the bdev.
 */
int bdev_file_open_ring(const char *path, int flags, struct acall_ring *ring, struct bdev **ret);

/*
 * Opening a device by the name a person gave: an NBD URI (nbd://host[:port]/
 * export, nbds://... with TLS, nbd+unix:///export?socket=PATH) or the path of
 * a file or block device. The one place names become devices.
 */
struct bdev_open_params {
	int flags;                      /* O_RDONLY or O_RDWR, plus O_DIRECT for files */
	struct acall_ring *ring;        /* files: I/O through it (NULL: plain syscalls) */
	/* NBD: connecting, and any request, may take this long before the
	 * device is failed (-ENODEV from then on); 0: 30 s. */
	unsigned timeout_ms;
	char *why;                      /* if set, the reason of a failure, for people */
	size_t why_size;
};
int bdev_open(const char *name, const struct bdev_open_params *p, struct bdev **ret);
/* Whether name is an NBD URI (bdev_open() connects to it). */
bool bdev_name_is_nbd(const char *name);
/*
 * An NBD export through libnbd: several connections when the server allows
 * multi-conn; -EROFS for O_RDWR on a read-only export, -ETIMEDOUT when the
 * server does not answer in time, libnbd's errno otherwise (p->why says more).
 */
int bdev_nbd_open(const char *uri, const struct bdev_open_params *p, struct bdev **ret);
/* The name an NBD bdev of uri has (struct bdev's name[]): the URI without its
 * query (TLS settings), a Unix socket's whole, cut to cap bytes. */
void bdev_nbd_name(const char *uri, char *buf, size_t cap);
/* The connections of an NBD bdev (0: not one). */
unsigned bdev_nbd_connections(const struct bdev *b);

/* Memory: size bytes of zeros. */
int bdev_mem_new(uint64_t size, struct bdev **ret);

/* A file or block device. flags: O_RDONLY or O_RDWR, plus O_DIRECT if wanted. */
int bdev_file_open(const char *path, int flags, struct bdev **ret);

/*
 * Fault injection over lower (owned: freed with the fault bdev). Faults are
 * set with the calls below at any time, from any thread.
 */
int bdev_fault_new(struct bdev *lower, struct bdev **ret);
/* Reads (and/or writes) touching [off, off+len) fail with -EIO. */
enum { BDEV_FAULT_READ = 1, BDEV_FAULT_WRITE = 2 };
int bdev_fault_add_bad(struct bdev *f, uint64_t off, uint64_t len, unsigned which);
void bdev_fault_clear(struct bdev *f);  /* drops every fault, revives a vanished device */
/* After n more successful I/Os, every I/O fails with -EIO (0: off). */
void bdev_fault_fail_after(struct bdev *f, uint64_t n);
/* Every I/O first sleeps this long. */
void bdev_fault_set_latency(struct bdev *f, unsigned usec);
/* The device is gone: every call fails with -ENODEV. */
void bdev_fault_vanish(struct bdev *f);
/*
 * The next write stores only its first keep bytes (rounded down to 512),
 * fails with -EIO, and the device vanishes: a power cut mid-write.
 */
void bdev_fault_tear_next_write(struct bdev *f, size_t keep);
/* I/Os that reached the fault bdev (failed or not). */
uint64_t bdev_fault_io_count(struct bdev *f);

/*
 * Record: writes go to lower (owned) and are logged, in order, to log
 * (owned), in dm-log-writes format (what fstests' replay-log reads):
 * a superblock in sector 0, then per entry a 512-byte header and the data.
 */
int bdev_record_new(struct bdev *lower, struct bdev *log, struct bdev **ret);
/* Adds a named mark entry (replay-log --end-mark NAME stops there). */
int bdev_record_mark(struct bdev *rec, const char *mark);
/* Entries in a log: 0 and *ret_n, or -EBADMSG when it is not one. */
int bdev_record_count(struct bdev *log, uint64_t *ret_n);
/* Applies the first n entries of a log to target: the disk after n steps. */
int bdev_record_replay(struct bdev *log, struct bdev *target, uint64_t n);

#endif
