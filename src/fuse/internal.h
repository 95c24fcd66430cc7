/*
 * internal.h - the FUSE front end's shared state: the session, the exported
 * instance and the options, split over ops.c (files and names), more.c
 * (directories, xattrs, ioctls), mount.c (session lifetime), devio.c (our
 * own /dev/fuse I/O), killpriv.c and passthrough.c.
 */
#ifndef PONY_FUSE_INTERNAL_H
#define PONY_FUSE_INTERNAL_H

#define FUSE_USE_VERSION FUSE_MAKE_VERSION(3, 14)
#include <fuse_lowlevel.h>
#include <linux/fuse.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/sysmacros.h>

#include "pony/fuse.h"

#define PONYFUSE_OPCODES 64             /* FUSE opcodes counted (all but CUSE's) */
#define PONYFUSE_READ_MAX (1u << 20)    /* the kernel's largest READ (max_pages
					 * 256), unless capped lower (mount.c) */
#define PONYFUSE_READAHEAD_READS 4u     /* READs in a readahead window (mount.c) */

struct ponyfuse_pt;
struct ponyfuse_readpool;
struct ponyfuse_uring;

struct ponyfuse {
	struct vfs *fs;                 /* the caller's */
	struct ponyfuse_options opts;
	struct fuse_session *se;
	char *mountpoint;
	bool mounted;
	bool borrowed;                  /* se is a daemon's own (transport_new) */
	bool signals_caught;            /* the stop handlers are on se (stop.c) */
	unsigned max_read;              /* the READ size cap (mount.c), 0: none */
	/* devio.c: requests read, by opcode; the INIT request's id until
	 * answered; whether the kernel offered passthrough in it. */
	atomic_uint_fast64_t requests[PONYFUSE_OPCODES];
	atomic_uint_fast64_t init_unique;
	bool pt_offered;
	/* uring.c: whether the kernel offered FUSE over io_uring in INIT;
	 * the payload size asked for in the answer (0: not asked); the rings
	 * once started; requests served over them; reads answered by a
	 * pread(2) straight into a ring's payload buffer. */
	bool uring_offered;
	size_t uring_payload;
	struct ponyfuse_uring *uring;
	atomic_bool uring_on;           /* uring set: the rings serve requests */
	atomic_uint_fast64_t uring_requests;
	atomic_uint_fast64_t uring_direct_reads;
	/* devio.c: answers spliced to /dev/fuse (libfuse's READ answers from
	 * a host file, when its pipe holds them). */
	atomic_uint_fast64_t spliced_answers;
	/* readpool.c: the helpers answering large READs over /dev/fuse (NULL:
	 * none, the worker answers), and how many they took. */
	struct ponyfuse_readpool *readpool;
	atomic_uint_fast64_t pooled_reads;
	atomic_uint_fast64_t pooled_peak;       /* most READs held at once */
	/* forget.c: one reader of /dev/fuse at a time while the rings are
	 * on, and when the next may read after a read of forgets; inodes
	 * forgotten (the items of FORGET and BATCH_FORGET). */
	pthread_mutex_t forget_lock;
	struct timespec forget_until;
	atomic_uint_fast64_t forgotten;
	/* passthrough.c: NULL when not asked for; pt_on once negotiated. */
	struct ponyfuse_pt *pt;
	atomic_bool pt_on;
};

/* Bytes of readahead: INIT's max_readahead, and the mount's bdi is raised
 * to it (mount.c). A whole number of READs (they may be capped: max_read),
 * so that a window is never followed by a small tail READ. */
static inline unsigned ponyfuse_readahead(const struct ponyfuse *pf)
{
	return PONYFUSE_READAHEAD_READS * (pf->max_read ? pf->max_read : PONYFUSE_READ_MAX);
}

/* Who sent req: its uid, gid, pid and umask, as the vfs hooks want them. */
void ponyfuse_ctx(fuse_req_t req, struct vfs_ctx *ctx);
void ponyfuse_statx_to_stat(const struct statx *x, struct stat *st);
void ponyfuse_init(void *userdata, struct fuse_conn_info *conn);
void ponyfuse_init_ops(struct fuse_lowlevel_ops *ops);
void ponyfuse_init_ops_more(struct fuse_lowlevel_ops *ops);
/* devio.c: libfuse's custom I/O on /dev/fuse, for what libfuse 3.14 lacks. */
int ponyfuse_devio_setup(struct ponyfuse *pf);
/* Notes a request read (by either transport): counters, kill bits, INIT. */
void ponyfuse_devio_note(struct ponyfuse *pf, const void *buf, size_t len);
/* Whether the request this worker handles asked for a suid/sgid kill. */
bool ponyfuse_devio_take_kill(void);
/* The open or create reply this worker sends next passes through to id. */
void ponyfuse_devio_reply_backing(int id);
/* "fuse_<opcode> count" lines for the requests read so far; the length. */
int ponyfuse_devio_counters(struct ponyfuse *pf, char *buf, size_t size);
/* reqlog.c: with PONY_FUSE_REQUEST_LOG set, the ended mount's line. */
void ponyfuse_reqlog_write(struct ponyfuse *pf, const struct timespec *started);
/* uring.c: FUSE over io_uring, one ring and thread per CPU. Starts the
 * rings once the INIT answer asked for them (on failure the kernel is told
 * to stay on /dev/fuse); stop joins the threads and frees (NULL: nothing). */
void ponyfuse_uring_start(struct ponyfuse *pf, size_t payload);
/* Whether this process can make the rings (io_uring_disabled, limits). */
bool ponyfuse_uring_usable(void);
void ponyfuse_uring_stop(struct ponyfuse_uring *ur);
unsigned ponyfuse_uring_queues(const struct ponyfuse_uring *ur);
bool ponyfuse_uring_failed(const struct ponyfuse_uring *ur);
/* On a ring thread serving a request: whether out answers it, and the
 * answer's delivery into the ring (as writev(2) would, from iov or from
 * a pipe holding len bytes). */
bool ponyfuse_uring_owns(const struct fuse_out_header *out);
bool ponyfuse_uring_serving(void);
ssize_t ponyfuse_uring_reply(const struct iovec *iov, int count);
ssize_t ponyfuse_uring_reply_pipe(int pipe_fd, size_t len);
/* On a ring thread serving a request: its payload buffer, where an answer
 * may be built in place (*room bytes); else NULL. */
void *ponyfuse_uring_payload(size_t *room);
/* On a ring thread serving a request: leave its answer to another thread
 * (NULL: not on a ring), which adopts the entry before it answers (the
 * answer then lands there, as above) and finishes it after: the ring's
 * thread commits it then. */
struct ponyfuse_uring_ent;
struct ponyfuse_uring_ent *ponyfuse_uring_defer(void);
void ponyfuse_uring_adopt(struct ponyfuse_uring_ent *ent);
void ponyfuse_uring_finish(struct ponyfuse_uring_ent *ent);
/* forget.c: with the rings on, /dev/fuse is read by one worker at a time,
 * pausing after forgets so the kernel batches them (instead of read(2)). */
void ponyfuse_forget_init(struct ponyfuse *pf);
void ponyfuse_forget_fini(struct ponyfuse *pf);
bool ponyfuse_forget_gated(struct ponyfuse *pf);
ssize_t ponyfuse_forget_read(struct ponyfuse *pf, int fd, void *buf, size_t len);
/* passthrough.c: FOPEN_PASSTHROUGH for opens of host files. */
int ponyfuse_pt_new(struct ponyfuse_pt **ret);
void ponyfuse_pt_free(struct ponyfuse_pt *pt);
/* The backing id to answer the open fh of ino with; 0: serve it as before. */
int ponyfuse_pt_open(struct ponyfuse *pf, uint64_t ino, uint64_t fh);
/* Drops fh's hold on its backing file, if it had one; before vfs release. */
void ponyfuse_pt_release(struct ponyfuse *pf, uint64_t fh);
int ponyfuse_pt_counters(struct ponyfuse *pf, char *buf, size_t size);
/* Drops suid (and sgid with group execute) when the request this worker
 * handles asked for it; *ret (if not NULL) gets the new attributes then. */
int ponyfuse_kill_suidgid(fuse_req_t req, uint64_t ino, uint64_t fh, struct statx *ret);
/* security.capability of ino dropped, as the kernel's file_remove_privs()
 * would on a write it passes through the page cache (a direct one skips
 * it): 0 when there was none, else removexattr's answer. */
int ponyfuse_drop_caps(fuse_req_t req, uint64_t ino);
/* Whether req's caller has CAP_FSETID: its writes never drop suid/sgid. */
bool ponyfuse_caller_keeps_suidgid(fuse_req_t req);
/* Whether req's caller holds capability cap (CAP_SYS_ADMIN ...) in its
 * effective set, as the kernel's capable() asks; false when it cannot be
 * told (a caller outside our pid namespace). */
bool ponyfuse_caller_capable(fuse_req_t req, unsigned cap);

/*
 * An ioctl's data FUSE does not carry (its restricted ioctls copy only
 * _IOC_SIZE(cmd) bytes, in the directions the number says), read from or
 * written to the caller's memory with process_vm_readv/writev (more.c).
 * 0, -EFAULT for an address the caller cannot reach either, -EPERM when
 * this daemon may not reach that process (not root, another user's
 * process; a caller outside our pid namespace).
 */
int ponyfuse_caller_read(fuse_req_t req, void *addr, void *buf, size_t len);
int ponyfuse_caller_write(fuse_req_t req, void *addr, void *buf, size_t len);
/* more.c: a restricted ioctl's fixed-size argument (size bytes in, and
 * back out when out), copied into a malloc'd block; NULL when too short or
 * out of memory, req answered then. */
void *ponyfuse_ioctl_arg(fuse_req_t req, const void *in_buf, size_t in_bufsz, size_t out_bufsz,
			 size_t size, bool out);
/* crypt.c: Linux's fscrypt ioctls and pony's two (salt, forced removal);
 * false when cmd is none of them (req not answered). */
bool ponyfuse_crypt_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned cmd, void *arg,
			  const void *in_buf, size_t in_bufsz, size_t out_bufsz);
/* layout.c: the layout ioctls (docs/layout.md); false when cmd is neither
 * (req not answered). */
bool ponyfuse_layout_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned cmd, unsigned flags,
			   const void *in_buf, size_t in_bufsz, size_t out_bufsz);
/* dwrite.c: the direct-write ioctls (docs/layout.md); false for another cmd. */
bool ponyfuse_dwrite_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned cmd, struct fuse_file_info *fi,
			   unsigned flags, const void *in_buf, size_t in_bufsz, size_t out_bufsz);
/* scrub.c: resolve, bad blocks and scrub (docs/scrub.md); false for another cmd. */
bool ponyfuse_scrub_ioctl(fuse_req_t req, unsigned cmd, const void *in_buf, size_t in_bufsz,
			  size_t out_bufsz);

/* stop.c (catch and release are in pony/fuse.h): the thread that runs the
 * loop, recorded again after daemonizing. */
void ponyfuse_stop_signals_loop_thread(void);

/* readpool.c: large READs of host files, or of instances whose read()
 * runs in parallel (vfs_ops.read_parallel), answered on helper threads. */
void ponyfuse_reply_host_read(fuse_req_t req, int fd, size_t size, off_t off);
/* Answers a READ with the instance's read() (ops.c). */
void ponyfuse_reply_vfs_read(fuse_req_t req, uint64_t ino, uint64_t fh, size_t size, off_t off);
int ponyfuse_readpool_start(struct ponyfuse *pf);
/* stop answers what is queued and ends the helpers (later READs are
 * answered by their callers); free, once no ring thread can submit. */
void ponyfuse_readpool_stop(struct ponyfuse *pf);
void ponyfuse_readpool_free(struct ponyfuse *pf);
/* true: queued, a helper answers req; false: answer it yourself. fd: the
 * host file, or -1 for the instance's read() of ino's fh. */
bool ponyfuse_readpool_submit(struct ponyfuse *pf, fuse_req_t req, int fd, uint64_t ino,
			      uint64_t fh, size_t size, off_t off);

#endif
