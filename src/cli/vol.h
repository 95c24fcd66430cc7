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
 * assemble / status output: text (with a "state:" line), or one JSON object
 * (vol_json_state's fields). Returns VOL_STATUS_CLEAN or VOL_STATUS_DEGRADED.
 */
int vol_print_status(struct vol_handle *h, bool json);
/* status's exit when vol_open() failed with exit code r. */
int vol_status_exit_open(int r, const struct vol_handle *h);
/* The volume's state (size, name, members, spares) into an open JSON object. */
void vol_json_state(struct util_json *j, struct vol_handle *h);
/* --json of a state change: {"action", "member" (if >= 0), "device" (if set), state...}. */
void vol_json_report(struct vol_handle *h, const char *action, int member, const char *device);
/* Parses a member index option. */
int vol_parse_member(const char *cmd, const char *text, unsigned *ret);

extern const struct cli_command cli_vol_fail, cli_vol_add, cli_vol_replace, cli_vol_readd,
	cli_vol_rebuild, cli_vol_scrub, cli_vol_badblocks, cli_vol_expose, cli_vol_stop, cli_vol_serve;

#endif
