/*
 * vol.h - what the `pony vol` command files share: opening members and
 * volumes (with the messages people need when that fails) and printing.
 */
#ifndef PONY_CLI_VOL_H
#define PONY_CLI_VOL_H

#include <stdbool.h>
#include <stdint.h>

#include "pony/util.h"
#include "pony/volume.h"

/* An opened volume: a pony set, or an md array / dm table (v alone). */
struct vol_handle {
	struct volume_set *set;
	struct volume *v;
	struct util_progress spare_bar;         /* a rebuild onto a hot spare */
	int open_error;                         /* vol_open failed assembling: its -errno */
	/* What assembly found (also when it failed): detail shows a failed volume's members. */
	struct volume_set_assembly assembly;
	uint64_t assembly_present;              /* failed: members given a device (names are gone) */
};

enum {
	/*
	 * status, table, read: change nothing on the members. Such an open
	 * may run degraded without --degraded: nothing is written, so no
	 * absent member goes stale.
	 */
	VOL_OPEN_RDONLY = 1,
	VOL_OPEN_MD = 2,        /* md v1.x superblocks, not pony's */
	VOL_OPEN_QUIET = 4,     /* no notices of absent members */
	VOL_OPEN_TABLE = 8,     /* paths[0] is a device-mapper table file ("-": stdin) */
	/* May start with members absent: --degraded, and the commands that mend volumes. */
	VOL_OPEN_DEGRADED = 16,
	VOL_OPEN_SILENT = 32,   /* no messages at all when assembly fails (monitor polls) */
};

/* Opens members and assembles; prints the reason on failure. 0 or CLI exit code. */
int vol_open(const char *cmd, char **paths, int n, unsigned flags, struct vol_handle *h);

/* cmd_vol_assemble.c: what assembling a pony volume found, for people (stderr). */
/* A line for each absent member: missing (its UUID), stale or truncated (its device). */
void vol_print_absent(const struct volume_set_assembly *a);
/* That a started volume runs degraded, if it does. */
void vol_print_degraded(const struct volume_set_assembly *a, bool rdonly);
/* Why volume_set_assemble() failed with r (naming paths[a->device] or the members). */
int vol_assembly_error(int r, const struct volume_set_assembly *a, char *const *paths,
		       unsigned n);
/* Closes (a pony set is marked clean). Returns 0, or CLI_EXIT_FAILURE after a message. */
int vol_close(struct vol_handle *h);
/* Opens one member device by path (read-write unless rdonly); message on failure. */
int vol_open_dev(const char *path, bool rdonly, struct bdev **ret);
/* From now on SIGINT/SIGTERM make vol_progress() stop the work (checkpoint saved). */
void vol_catch_interrupt(void);
/* Whether SIGINT/SIGTERM came since vol_catch_interrupt(). */
bool vol_interrupt_pending(void);
/* A progress callback drawing a util_progress bar (arg: struct util_progress *). */
int vol_progress(uint64_t done, uint64_t total, void *arg);
/* "ok", "failed", "rebuilding". */
const char *vol_state_name(enum volume_member_state s);
/* `pony vol status` exit codes, as mdadm --detail --test's. */
enum {
	VOL_STATUS_CLEAN = 0,
	VOL_STATUS_DEGRADED = 1,        /* members absent, or being rebuilt */
	VOL_STATUS_FAILED = 2,          /* fewer members than the level needs */
	VOL_STATUS_ERROR = 4,           /* the members cannot be read as a volume */
};
/*
 * assemble / status output: the volume record, its regions and members, as
 * text or one JSON object. Returns VOL_STATUS_CLEAN or VOL_STATUS_DEGRADED
 * (VOL_STATUS_ERROR: it could not be printed).
 */
int vol_print_status(struct vol_handle *h, bool json);
/* The volume as a whole: members out, being rebuilt, and how far. */
struct vol_state {
	unsigned missing, rebuilding;
	int percent;                    /* of the rebuild; -1: not known */
};
void vol_state_get(struct vol_handle *h, struct vol_state *st);
/* "clean", "degraded" or "rebuilding". */
const char *vol_state_word(const struct vol_state *st);
/* Member m as the set (or the bare volume) knows it. */
void vol_member_get(struct vol_handle *h, unsigned m, struct volume_set_member *sm);
/* status's exit when vol_open() failed with exit code r. */
int vol_status_exit_open(int r, const struct vol_handle *h);
/* --json of a state change: status's JSON, the volume record opening with
 * "action", "member" (if >= 0) and "device" (if set). */
void vol_json_report(struct vol_handle *h, const char *action, int member, const char *device);
/* Parses a member index option. */
int vol_parse_member(const char *cmd, const char *text, unsigned *ret);

/*
 * cmd_vol_names.c: volumes by name. A single argument that is UUID=U,
 * LABEL=L, or no file but a name `pony vol assemble` recorded in the device
 * database; vol_open() takes these through vol_find_members().
 */
bool vol_is_named(const char *arg);
/* The members of the volume arg names, as vol_open() opens them; message and exit 1 if none. */
int vol_find_members(const char *arg, char ***ret_paths, int *ret_n);
/*
 * Records the assembled pony volume in the device database as name (NULL:
 * its label), and the local members among paths so their tags are
 * current. 0; a failure is a warning, or with an asked-for name an error.
 */
int vol_record(struct vol_handle *h, const char *name, char *const *paths, int n);
/* The name the device database has for volume uuid (8-4-4-4-12) into buf; false if none. */
bool vol_recorded_name(const char *uuid, char *buf, size_t size);
/* Tells the device database about a device that just became a member (add, replace). */
void vol_devdb_note(const char *path);

/*
 * cmd_vol_progress.c: rebuild and scrub progress seen from other processes.
 * Whoever runs the work (a vol command, a mounted ponyfs daemon's spare
 * worker) publishes it in PONY_RUNDIR (default /run/pony)/volume/UUID.
 */
/* Publishes p as the work on the set's volume; false (p unchanged) where it cannot. */
bool vol_progress_publish(struct volume_set *set, struct util_progress *p);
/* Starts watching the set's rebuilds onto hot spares into p (published). */
void vol_watch_spare(struct volume_set *set, struct util_progress *p);
/* The work another process publishes on the set's volume: 0 or -ENOENT. */
int vol_progress_of(const uint8_t *uuid, struct util_progress_status *ret);

/*
 * cmd_vol_detail.c: a volume as `pony vol detail` shows it and `pony vol
 * monitor` compares from one look to the next: copies, so it outlives the
 * open. A volume that cannot run (fewer members than its level needs) is
 * "failed" with what its superblocks say; one that cannot be read is not known.
 */
#define VOL_DEVICE_MAX 256
struct vol_detail_member {
	char role[16];                          /* "0", "1" ...; "spare0" ... */
	char device[VOL_DEVICE_MAX];            /* path or NBD URI; "" none */
	char uuid[VOLUME_UUID_STRLEN];          /* member UUID; "" (spares) */
	const char *state;                      /* ok, failed, rebuilding, missing, stale, truncated, spare */
};
struct vol_detail {
	bool known;                             /* the superblocks were read */
	char name[64], uuid[VOLUME_UUID_STRLEN];
	char level[16], layout[24];             /* of the data region; "" not known */
	uint64_t chunk, size;
	const char *state;                      /* clean, degraded, rebuilding, failed */
	int test_exit;                          /* VOL_STATUS_* */
	bool working;                           /* a rebuild or scrub is under way: */
	char work[32];                          /* "rebuild", "scrub", "rebuild onto spare" */
	unsigned percent;
	double rate, eta;                       /* bytes a second (0: not known), seconds (-1) */
	unsigned nmembers;                      /* members, then spares */
	struct vol_detail_member members[VOLUME_MAX_MEMBERS + 8];
};
/* Looks at the volume paths[0..n) give (read-only, quiet with silent). */
void vol_detail_get(char **paths, int n, bool silent, struct vol_detail *d);

extern const struct cli_command cli_vol_detail, cli_vol_monitor;
extern const struct cli_command cli_vol_fail, cli_vol_add, cli_vol_replace, cli_vol_readd,
	cli_vol_rebuild, cli_vol_scrub, cli_vol_badblocks, cli_vol_expose, cli_vol_stop, cli_vol_serve;

#endif
