/*
 * soak.h - what the fault-injection soak's two processes share. The
 * supervisor (soak.c) makes a RAID6 ponyfs on image files and, cycle after
 * cycle, forks a daemon (daemon.c) that mounts it over fault bdevs, runs
 * writers and a fault injector, and is killed with SIGKILL at a random
 * moment. The model lives in a MAP_SHARED mapping made before the fork, so
 * what the daemon acknowledged is still there after the kill, and the
 * supervisor checks the filesystem against it (model.c).
 *
 * One writer owns its slots: it alone writes a slot's versions, so the
 * model of a slot needs no lock, only ordered stores.
 */
#ifndef PONY_SOAK_H
#define PONY_SOAK_H

#include <stdbool.h>
#include <stdint.h>

#include "pony/vfs.h"

#define SOAK_MEMBERS 6
#define SOAK_WRITERS 4
#define SOAK_SLOTS 48                   /* files per writer */
#define SOAK_RING 256                   /* versions a slot may have in flight */
#define SOAK_MAX_LEN (192u << 10)       /* largest file content */
#define SOAK_VICTIMS 2                  /* members a cycle may damage: RAID6's redundancy */

/*
 * What a slot's version v is: its content, no file at all, or its content
 * written into a file this version creates (truncate-and-rewrite of a name
 * that did not exist): a crash may then leave the new name empty, as on any
 * filesystem, since there was no old content to keep.
 */
enum { SOAK_KIND_FILE = 1, SOAK_KIND_GONE = 2, SOAK_KIND_NEW = 3,
       SOAK_KIND_TORN = 4 };    /* a rewrite whose call failed (ENOSPC), or a new file whose
				 * writes came back short (metadata full) and went on: any
				 * prefix of it, as a crash between two write(2)s leaves */

/*
 * One file of the model. Versions start at 1; 0 is "never existed".
 * durable <= acked <= started. After a crash the file must hold one of the
 * versions in [durable, started] (all of its bytes), or be absent if one of
 * them is GONE (or durable is 0 and nothing was ever made durable).
 */
struct soak_slot {
	uint64_t durable;               /* made durable by an fsync or syncfs */
	uint64_t acked;                 /* the last version whose call returned 0 */
	uint64_t started;               /* the last version begun */
	uint8_t kind[SOAK_RING];        /* kind of version v at v % SOAK_RING */
	bool exists;                    /* the name exists, as far as the writer knows */
};

/* Faults of a cycle, for the counts and the log check. */
struct soak_fault_counts {
	uint64_t member_failures, read_errors, bit_flips, full_phases;
};

struct soak_shared {
	struct soak_slot slot[SOAK_WRITERS][SOAK_SLOTS];
	struct soak_fault_counts faults;        /* this cycle's, injected by the daemon */
	int victim[SOAK_VICTIMS];               /* members this cycle may damage; -1: none */
	bool vanished[SOAK_MEMBERS];            /* failed on purpose this cycle */
	uint64_t ops, enospc;                   /* this cycle's writer calls and ENOSPCs */
	/* A writer saw an error it must never see (EIO on a RAID6 with at
	 * most two members damaged): what and where, for the report. */
	int unexpected_errno;
	char unexpected_what[160];
	bool ready;                             /* the daemon mounted and runs */
};

struct soak_config {
	const char *dir;                        /* member images and the log */
	char member[SOAK_MEMBERS][512];
	char log[512];
	uint64_t member_size;
	uint64_t seed;
};

/* model.c: content of a version, and the check of one file against its slot. */
size_t soak_version_len(unsigned writer, unsigned slot, uint64_t version);
void soak_version_fill(unsigned writer, unsigned slot, uint64_t version, uint8_t *buf, size_t len);
/*
 * Checks what the file holds (data, len; exists false: no such name)
 * against the slot. 0 and *ret_version (0: absent) when it is one of the
 * slot's allowed versions; -1 with a description in why otherwise.
 */
int soak_check_file(const struct soak_slot *s, unsigned writer, unsigned slot, bool exists,
		    const uint8_t *data, size_t len, uint64_t *ret_version, char *why, size_t why_size);
void soak_slot_name(unsigned writer, unsigned slot, char *buf, size_t size);

/* daemon.c: the child's whole life; never returns. */
void soak_daemon_run(const struct soak_config *cfg, struct soak_shared *sh, uint64_t seed)
	__attribute__((noreturn));

/* Small helpers over the vfs ops table (vfsio.c), errors as -errno. */
int soak_walk_dir(struct vfs *fs, const char *name, uint64_t *ret_ino);
/* Writes buf as name's content in calls of up to 128 KiB, going on after a
 * short write as an application does; at the first short write it stores
 * SOAK_KIND_TORN in *kind_on_short (when given), before the next call. */
int soak_put(struct vfs *fs, uint64_t dir, const char *name, const uint8_t *buf, size_t len,
	     bool truncate_in_place, bool do_fsync, uint8_t *kind_on_short);
int soak_get(struct vfs *fs, uint64_t dir, const char *name, uint8_t *buf, size_t size,
	     size_t *ret_len);
int soak_rename(struct vfs *fs, uint64_t dir, const char *from, const char *to);
int soak_unlink(struct vfs *fs, uint64_t dir, const char *name);
int soak_fsync_dir(struct vfs *fs, uint64_t dir);

#endif
