/*
 * include/pony/devdb.h - the device discovery database: probers that read
 * superblocks and partition tables (names and values as libblkid prints
 * them), and an SQLite index that finds any device by tag without a scan.
 *
 * Two halves. devdb_probe_*() reads one device through a small read
 * interface and returns what it holds; it never touches the database.
 * devdb_open() and the rest keep devices, their paths and their tags in
 * SQLite and answer lookups from the (name, value) index, re-probing a hit
 * only when its identity (dev_t, size, mtime, diskseq) changed.
 */
#ifndef PONY_DEVDB_H
#define PONY_DEVDB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- probing ---------------------------------------------------------- */

/*
 * How a prober reads: len bytes at off into buf. The probe engine never asks
 * for bytes outside [0, size), so a reader need not check. Returns the bytes
 * read (short only at end of device) or -errno.
 */
struct devdb_reader {
	uint64_t size;
	void *ctx;
	int64_t (*read)(void *ctx, void *buf, size_t len, uint64_t off);
};

struct devdb_tag {
	char *name;             /* "TYPE", "LABEL", "PART_ENTRY_UUID", ... */
	char *value;            /* UTF-8, NUL-terminated */
};

struct devdb_tags {
	struct devdb_tag *v;
	size_t n, cap;
};

enum devdb_probe_status {
	DEVDB_PROBE_NONE = 0,           /* nothing recognised */
	DEVDB_PROBE_FOUND = 1,          /* tags hold what was found */
	DEVDB_PROBE_AMBIVALENT = 2,     /* two signatures; see .ambivalent */
};

/* One partition of a partition table: a device of its own. */
struct devdb_part {
	unsigned number;                /* PART_ENTRY_NUMBER */
	uint64_t offset, size;          /* bytes from the start of the disk */
	enum devdb_probe_status status; /* of the superblock probe inside it */
	char *ambivalent;
	struct devdb_tags tags;         /* PART_ENTRY_*, PARTUUID, PARTLABEL, FS tags */
};

struct devdb_probe_result {
	enum devdb_probe_status status;
	char *ambivalent;               /* "filesystem:ext4:1.0 other:swap:1" */
	struct devdb_tags tags;         /* TYPE, UUID, LABEL, ..., PTTYPE, PTUUID */
	size_t nparts;
	struct devdb_part *parts;
	uint64_t bytes_read;            /* what the probers read, all told */
	unsigned reads;                 /* in how many read calls */
};

struct devdb_probe_opts {
	uint64_t session_offset;        /* iso9660/udf multi-session (blkid --hint) */
	bool no_partitions;             /* superblocks only */
};

/*
 * Probe what rd holds. On 0, *ret is the caller's: free it with
 * devdb_probe_result_free(). -errno only for I/O errors and ENOMEM; "nothing
 * found" and "ambivalent" are results, not errors. opts may be NULL.
 */
int devdb_probe_reader(const struct devdb_reader *rd, const struct devdb_probe_opts *opts,
		       struct devdb_probe_result **ret);
/* The same over a file or block device (opened read-only). */
int devdb_probe_path(const char *path, const struct devdb_probe_opts *opts,
		     struct devdb_probe_result **ret);
/* The same over bytes in memory (tests, fuzzing). */
int devdb_probe_buffer(const void *buf, size_t len, const struct devdb_probe_opts *opts,
		       struct devdb_probe_result **ret);
void devdb_probe_result_free(struct devdb_probe_result *r);   /* NULL: nothing */
static inline void devdb_probe_result_freep(struct devdb_probe_result **r)
{
	devdb_probe_result_free(*r);
}

/* The value of tag name in tags, or NULL. */
const char *devdb_tags_get(const struct devdb_tags *tags, const char *name);
/* Append a copy of name=value; 0 or -ENOMEM. */
int devdb_tags_add(struct devdb_tags *tags, const char *name, const char *value);
void devdb_tags_done(struct devdb_tags *tags);

/* The names of the formats the probers know, NULL-terminated. */
const char *const *devdb_probe_formats(void);

/*
 * Output encodings of blkid(8): devdb_encode_string() writes \xNN for every
 * byte that is not alphanumeric, "#+-.:=@_" or valid multibyte UTF-8 (the
 * ID_FS_*_ENC form); devdb_safe_string() squeezes whitespace and replaces it
 * and invalid bytes with '_' (the ID_FS_LABEL form). 0, or -ENOSPC.
 */
int devdb_encode_string(const char *str, char *out, size_t len);
int devdb_safe_string(const char *str, char *out, size_t len);

/* ---- the database ----------------------------------------------------- */

struct devdb;

/* A device as the database knows it. */
struct devdb_dev {
	int64_t id;
	char *path;                     /* preferred path (see devdb_dev_paths) */
	char *kind;                     /* "block", "file", "partition", "remote" */
	char *connect;                  /* remote: "nbd://host:port/export"; else NULL */
	bool present;                   /* false: vanished, or not connected yet */
	enum devdb_probe_status status; /* of its last probe */
	char *ambivalent;               /* status AMBIVALENT: what was found */
	uint64_t size;
	struct devdb_tags tags;
	size_t npaths;
	char **paths;                   /* every known path, preferred first */
};

#define DEVDB_DEFAULT_PATH "/var/lib/pony/devdb.sqlite"

enum {
	/* Lookups trust the index without the stat check (index benchmarks only). */
	DEVDB_OPEN_NOVERIFY = 1 << 0,
};

/*
 * Opens (creating if needed, with its directory) the database at path; NULL
 * means $PONY_DEVDB or DEVDB_DEFAULT_PATH. On 0, *ret_db is the caller's:
 * devdb_close() it.
 */
int devdb_open(const char *path, unsigned flags, struct devdb **ret_db);
void devdb_close(struct devdb *db);                             /* NULL: nothing */
static inline void devdb_closep(struct devdb **db)
{
	devdb_close(*db);
}
/* The file the database lives in (for messages). */
const char *devdb_path(const struct devdb *db);

enum {
	DEVDB_SCAN_FORCE = 1 << 0,      /* re-probe even if the identity is unchanged */
};

/* Per-path outcome of devdb_scan(): probed, unchanged (cache hit) or gone. */
struct devdb_scan_stats {
	unsigned probed, unchanged, vanished, failed, found;
	uint64_t bytes_read;
};

/*
 * Adds or refreshes the devices at paths (files, block devices or
 * directories of image files; NULL/0: every block device in
 * /sys/class/block). Probing runs in parallel. progress, if not NULL, is
 * called with (done, total) now and then. Devices under the given
 * directories (or every block device) that were known but are gone are
 * marked absent.
 */
int devdb_scan(struct devdb *db, const char *const *paths, size_t npaths, unsigned flags,
	       void (*progress)(void *ctx, uint64_t done, uint64_t total), void *ctx,
	       struct devdb_scan_stats *ret_stats);

/*
 * Probe one path now and store it (what `watch` does for one event); a path
 * that no longer exists is marked absent. 1 if something changed, 0 if the
 * identity was unchanged, -errno.
 */
int devdb_update_path(struct devdb *db, const char *path);
/* Marks a path absent (a removed device); -ENOENT if unknown. */
int devdb_mark_absent(struct devdb *db, const char *path);
/* Directories holding known image files (for `watch`); same ownership as
 * devdb_duplicate_uuids(). */
int devdb_image_dirs(struct devdb *db, char ***ret_dirs, size_t *ret_n);

/*
 * Block device events (`pony dev watch`): udev's, through libudev (loaded
 * on demand), when udevd runs; else the kernel's uevents read from
 * NETLINK_KOBJECT_UEVENT directly. AUTO picks by /run/udev/control.
 */
enum devdb_uevent_source { DEVDB_UEVENT_AUTO, DEVDB_UEVENT_UDEV, DEVDB_UEVENT_KERNEL };
struct devdb_uevent {
	char action[16];        /* add, change, remove, ... */
	char node[256];         /* /dev/loop0 */
};
struct devdb_uevents;
int devdb_uevents_open(enum devdb_uevent_source source, struct devdb_uevents **ret);
void devdb_uevents_free(struct devdb_uevents *ev);
static inline void devdb_uevents_freep(struct devdb_uevents **ev)
{
	devdb_uevents_free(*ev);
}
/* The descriptor to poll for POLLIN. */
int devdb_uevents_fd(const struct devdb_uevents *ev);
enum devdb_uevent_source devdb_uevents_source(const struct devdb_uevents *ev);
/* 1: *out is a block device event; 0: nothing (or not a block device); -errno. */
int devdb_uevents_receive(struct devdb_uevents *ev, struct devdb_uevent *out);

/* Inserts n synthetic devices (benchmarks): path prefix + i, LABEL/UUID tags. */
int devdb_add_synthetic(struct devdb *db, const char *prefix, uint64_t n);

/*
 * Devices whose tags match every name=value in names/values (AND). Each hit
 * is checked with one stat (and diskseq) first and re-probed alone if its
 * identity changed; vanished devices are marked absent and not returned,
 * devices registered as remote are returned with present = false.
 * On 0, *ret_devs (an array of *ret_n) is the caller's: devdb_devs_free().
 * -ENOENT: no match.
 */
int devdb_find(struct devdb *db, const char *const *names, const char *const *values,
	       size_t nterms, struct devdb_dev ***ret_devs, size_t *ret_n);
/* The first of devdb_find() for one tag, preferring present devices. */
int devdb_find_tag(struct devdb *db, const char *name, const char *value,
		   struct devdb_dev **ret_dev);
/* "LABEL=x", "UUID=x", or a path; the path of the best match. */
int devdb_resolve_spec(struct devdb *db, const char *spec, char **ret_path);

/* Whether arg names a pony volume (UUID=... or LABEL=...), not a path. */
bool devdb_is_volume_spec(const char *arg);
/*
 * The present members of the pony volume spec names (UUID=... or
 * LABEL=..., tagged by the pony_volume_member prober): what to open for
 * each, a path or a registered NBD export's URI. On 0, *ret_names (*ret_n
 * strings) and each string are the caller's to free. -EINVAL: not such a
 * spec, or an empty value; -ENOENT: no member known (or none present).
 */
int devdb_volume_members(struct devdb *db, const char *spec, char ***ret_names, size_t *ret_n);

/* Every device (present or not). Same ownership as devdb_find(). */
int devdb_list(struct devdb *db, struct devdb_dev ***ret_devs, size_t *ret_n);
/* One device by any of its paths. -ENOENT if unknown. */
int devdb_get(struct devdb *db, const char *path, struct devdb_dev **ret_dev);

/*
 * Registers a device that exists only once connected: uri is how to connect
 * ("nbd://host:port/export", "iscsi://host/iqn.../lun"), tags the identity to
 * expect (e.g. UUID=...). Lookups return it with present = false.
 */
int devdb_register(struct devdb *db, const char *uri, const struct devdb_tags *tags);
/* Forgets a device (by any path or URI). -ENOENT if unknown. */
int devdb_forget(struct devdb *db, const char *path);

/* UUIDs held by more than one device: on 0, *ret_uuids (n) is the caller's. */
int devdb_duplicate_uuids(struct devdb *db, char ***ret_uuids, size_t *ret_n);

/*
 * Named volumes: `pony vol assemble` records a pony volume's name, UUID and
 * member UUIDs, so commands take the name; the members themselves are
 * found by their tags (UUID= the volume's, TYPE=pony_volume_member).
 */
struct devdb_volume {
	char *name;
	char *uuid;                     /* the volume's, 8-4-4-4-12 */
	size_t nmembers;
	char **member_uuids;            /* by member index */
};
/* Records v; its name is taken from any other volume that had it (the last assembled wins). */
int devdb_volume_record(struct devdb *db, const struct devdb_volume *v);
/* The volume named key, or whose UUID is key. On 0, *ret is yours: devdb_volume_free(). -ENOENT. */
int devdb_volume_get(struct devdb *db, const char *key, struct devdb_volume **ret);
/* Every recorded volume, by name. On 0, *ret (n) is yours: devdb_volumes_free(). */
int devdb_volume_list(struct devdb *db, struct devdb_volume ***ret, size_t *ret_n);
void devdb_volume_free(struct devdb_volume *v);                 /* NULL: nothing */
void devdb_volumes_free(struct devdb_volume **v, size_t n);
static inline void devdb_volume_freep(struct devdb_volume **v)
{
	devdb_volume_free(*v);
}

void devdb_dev_free(struct devdb_dev *dev);                     /* NULL: nothing */
void devdb_devs_free(struct devdb_dev **devs, size_t n);
static inline void devdb_dev_freep(struct devdb_dev **dev)
{
	devdb_dev_free(*dev);
}

#endif
