/*
 * include/pony/util.h - small helpers every component uses: fixed-width
 * little-endian types for on-disk formats, scope-bound cleanup (after
 * systemd's), checksums, sizes, time, a JSON writer, a progress bar and hot locks.
 * Nothing here knows about any component.
 */
#ifndef PONY_UTIL_H
#define PONY_UTIL_H

#include <endian.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define DIV_ROUND_UP(n, d) (((n) + (d) - 1) / (d))
#define ROUND_UP(n, a) (DIV_ROUND_UP(n, a) * (a))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define UNUSED __attribute__((unused))

/*
 * On-disk integers. Each wraps a uintN_t in a struct so that using one as a
 * CPU integer without the conversion does not compile.
 */
typedef struct { uint16_t v; } le16;
typedef struct { uint32_t v; } le32;
typedef struct { uint64_t v; } le64;

static inline uint16_t le16_to_cpu(le16 x) { return le16toh(x.v); }
static inline uint32_t le32_to_cpu(le32 x) { return le32toh(x.v); }
static inline uint64_t le64_to_cpu(le64 x) { return le64toh(x.v); }
static inline le16 cpu_to_le16(uint16_t x) { return (le16){ htole16(x) }; }
static inline le32 cpu_to_le32(uint32_t x) { return (le32){ htole32(x) }; }
static inline le64 cpu_to_le64(uint64_t x) { return (le64){ htole64(x) }; }

/* Unaligned loads from a byte buffer (superblocks are read into byte arrays). */
static inline uint16_t util_get_le16(const void *p)
{
	const uint8_t *b = p;
	return (uint16_t)(b[0] | b[1] << 8);
}
static inline uint32_t util_get_le32(const void *p)
{
	const uint8_t *b = p;
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}
static inline uint64_t util_get_le64(const void *p)
{
	return util_get_le32(p) | (uint64_t)util_get_le32((const uint8_t *)p + 4) << 32;
}
static inline uint16_t util_get_be16(const void *p)
{
	const uint8_t *b = p;
	return (uint16_t)(b[0] << 8 | b[1]);
}
static inline uint32_t util_get_be32(const void *p)
{
	const uint8_t *b = p;
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | (uint32_t)b[3];
}
static inline uint64_t util_get_be64(const void *p)
{
	return (uint64_t)util_get_be32(p) << 32 | util_get_be32((const uint8_t *)p + 4);
}

/*
 * Scope-bound cleanup. `_cleanup_(freep) char *s = ...;` frees s when it goes
 * out of scope; `return TAKE_PTR(s);` hands it on instead.
 */
#define _cleanup_(f) __attribute__((cleanup(f)))
#define TAKE_PTR(p) ({ __typeof__(p) _p = (p); (p) = NULL; _p; })
#define TAKE_FD(fd) ({ int _fd = (fd); (fd) = -1; _fd; })

static inline void freep(void *p) { free(*(void **)p); }
static inline void closep(int *fd)
{
	if (*fd >= 0)
		close(*fd);
}
static inline void fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

/* Memory aligned to 4096 bytes (O_DIRECT, superblocks); free() it. */
void *util_aligned_alloc(size_t size);

/*
 * A buffer per thread, aligned as util_aligned_alloc()'s, kept from one
 * call to the next and freed when its thread ends: for a large buffer
 * taken on every request (a FUSE READ's answer, a scrub span), where an
 * allocation each time costs the mapping and page faults of fresh memory
 * (glibc maps large blocks). Define one per use, zeroed (`static struct
 * util_thread_buf b;`); util_thread_buf(&b, len) returns the calling
 * thread's buffer of at least len bytes (its contents are not kept when it
 * grows), or NULL without memory.
 */
struct util_thread_buf {
	pthread_key_t key;
	bool ready;
};
uint8_t *util_thread_buf(struct util_thread_buf *tb, size_t len);

/*
 * Room for element n of an array of *cap elements: arr itself while n <
 * *cap, else arr reallocated to twice *cap (first when empty) and *cap
 * updated. NULL when out of memory, arr then unchanged and still owned.
 */
void *util_array_grow(void *arr, size_t *cap, size_t n, size_t elem_size, size_t first);

/* CRC32C (Castagnoli), as iSCSI, ext4 and btrfs use it; seed 0 for a new sum. */
uint32_t util_crc32c(uint32_t seed, const void *buf, size_t len);

/* A new RFC 4122 UUID, version 4 (random), variant 1 (libuuid). */
void util_uuid_generate(uint8_t uuid[16]);

/* Monotonic clock in nanoseconds. */
static inline uint64_t util_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * "4096", "64K", "1M", "2G", "1T" (binary units, an optional trailing B or
 * iB) -> bytes. 0 or -EINVAL / -ERANGE.
 */
int util_parse_size(const char *text, uint64_t *ret_bytes);

/* 1536 -> "1.5K"; buf of at least 16 bytes. Returns buf. */
const char *util_format_size(uint64_t bytes, char *buf, size_t len);

/*
 * A minimal streaming JSON writer for `--json` output. Commas and quoting are
 * handled here, so callers only say what the document holds.
 */
struct util_json {
	FILE *out;
	int depth;
	bool need_comma[32];
};
void util_json_init(struct util_json *j, FILE *out);
void util_json_object_begin(struct util_json *j, const char *key); /* key NULL at top or in arrays */
void util_json_object_end(struct util_json *j);
void util_json_array_begin(struct util_json *j, const char *key);
void util_json_array_end(struct util_json *j);
void util_json_string(struct util_json *j, const char *key, const char *value);
void util_json_int(struct util_json *j, const char *key, int64_t value);
void util_json_uint(struct util_json *j, const char *key, uint64_t value);
void util_json_double(struct util_json *j, const char *key, double value);
void util_json_bool(struct util_json *j, const char *key, bool value);
void util_json_end(struct util_json *j); /* writes the final newline */

/*
 * Progress of long work (rebuild, scrub, mkfs, fsck, scans) with its
 * percent, rate and time left, on stderr: on a terminal a bar redrawn at
 * most every 100 ms; otherwise (a log, a pipe) a line every 10 % or 10 s,
 * none in the first second so short work stays quiet. A total of 0 (not
 * known) draws the bar only. util_progress_publish() also keeps the figures
 * in a small status file for other processes (`pony vol detail` from
 * another shell; docs/volume.md), rewritten at most once a second;
 * util_progress_done() clears the bar, prints the last line and removes
 * that file. done may be set from any one thread at a time.
 */
struct util_progress {
	const char *what;
	uint64_t total;
	uint64_t done;
	uint64_t start_ns, start_done;  /* the first update: rate counts from there */
	uint64_t last_draw_ns, last_line_ns, last_publish_ns;
	uint64_t last_line_done;        /* done when the last line was printed */
	uint64_t quiet_ns;              /* no line before this long (PONY_PROGRESS_QUIET_MS) */
	unsigned last_line_tenth;       /* the last line's percent / 10 */
	bool enabled;                   /* stderr is a terminal: the bar */
	bool lines;                     /* stderr is not: periodic lines */
	char *publish_path;             /* the status file; NULL: none */
};
void util_progress_init(struct util_progress *p, const char *what, uint64_t total);
void util_progress_update(struct util_progress *p, uint64_t done);
/* The total of work that did not know it at init (periodic lines start then). */
void util_progress_set_total(struct util_progress *p, uint64_t total);
void util_progress_done(struct util_progress *p);
/* Publishes the progress at path (its directory must exist) from the next update on: 0 or -ENOMEM. */
int util_progress_publish(struct util_progress *p, const char *path);
/* Bytes a second since the first update (0: not known yet), and seconds left (-1: not known). */
void util_progress_rate(const struct util_progress *p, double *ret_rate, double *ret_eta);

/* A published status file as read back (util_progress_read). */
struct util_progress_status {
	char what[32];                  /* "rebuild", "scrub", ... */
	long pid;                       /* the process doing the work */
	uint64_t done, total;
	unsigned percent;
	double rate, eta;               /* bytes a second; seconds left (-1: not known) */
	int64_t updated;                /* CLOCK_REALTIME seconds of the last rewrite */
};
/* 0; -ENOENT (none, or its writer is gone: the file is stale); -EBADMSG; -errno. */
int util_progress_read(const char *path, struct util_progress_status *ret);

/*
 * Events of a running daemon (a member failed, a checksum was repaired, a
 * commit failed, the filesystem went read-only): one line each, naming the
 * object and the cause, to syslog and/or a file a daemon opened. prio is a
 * syslog priority (LOG_ERR, LOG_WARNING, LOG_NOTICE, LOG_INFO from
 * <syslog.h>). Before util_log_open() a line is only counted and given to
 * the sink, so libraries may log without knowing who runs them.
 */
enum {
	UTIL_LOG_SYSLOG = 1u << 0,      /* syslog(3), facility daemon */
	UTIL_LOG_STDERR = 1u << 1,      /* "IDENT: TEXT" on stderr (foreground daemons) */
};
/* file NULL: no file. -errno when file cannot be opened for appending. */
int util_log_open(const char *ident, const char *file, unsigned flags);
void util_log_close(void);
void util_log(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void util_vlog(int prio, const char *fmt, va_list ap);
/* Every line is also handed to sink (tests check what was logged); NULL: none. */
typedef void (*util_log_sink_t)(void *arg, int prio, const char *text);
void util_log_set_sink(util_log_sink_t sink, void *arg);
uint64_t util_log_lines(void);          /* lines logged since the process started */

/* A lock held briefly by several threads: spins a moment before it sleeps. */
void util_mutex_init_adaptive(pthread_mutex_t *m);

#endif
