/*
 * cmd_fs_scrub.c - bad blocks back to files and the passive scrub, asked
 * of a pony mount's daemon through its ioctls (docs/scrub.md):
 * `pony fs resolve MNT VOLUME_OFFSET|MEMBER:SECTOR` says what lives at one
 * address, `pony fs badblocks MNT` lists every known bad or repaired
 * region with what lives there, and `pony fs scrub start|status|stop MNT`
 * runs the daemon's background pass over the volume.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "pony/fuse.h"
#include "pony/util.h"

static const char *const what_names[] = { "free", "file", "metadata", "parity", "none" };
static const char *const meta_names[] = { "superblock", "chunk table", "database", "WAL", "unused" };
static const char *const role_names[] = { "data", "copy", "P", "Q" };
static const char *const source_names[] = {
	"member bad-block log", "read", "scrub", "scrub checksum",
};

static const char *name_of(const char *const *names, size_t n, uint32_t v)
{
	return v < n ? names[v] : "unknown";
}

/* A failed ioctl's errno as a sentence about the mount. */
static int scrub_error(const char *cmd, const char *mnt, int err)
{
	switch (err) {
	case ENOTCONN: return cli_path_error(mnt, err);
	case ENOTTY: return cli_error("%s: %s: not a pony mount", cmd, mnt);
	case EOPNOTSUPP: return cli_error("%s: %s: this mount's filesystem has no bad-block map "
					  "or scrub (not ponyfs)", cmd, mnt);
	case EPROTONOSUPPORT: return cli_error("%s: %s: the mount's daemon speaks another "
					       "version of these ioctls", cmd, mnt);
	case ERANGE: return cli_error("%s: %s: the address is outside the volume", cmd, mnt);
	case ENODEV: return cli_error("%s: %s: not on a pony volume: it has no members", cmd, mnt);
	case EBUSY: return cli_error("%s: %s: a scrub is already running", cmd, mnt);
	case EROFS: return cli_error("%s: %s: mounted read-only: scrub repairs, so it needs a "
				     "read-write mount", cmd, mnt);
	default: return cli_error("%s: %s: %s", cmd, mnt, strerror(err));
	}
}

static int mount_open(const char *cmd, const char *mnt, int *ret_fd)
{
	int fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return cli_path_error(mnt, errno);
	*ret_fd = fd;
	return 0;
}

/* Member index's device as the mount opened it ("" when unknown). */
static void member_device(int fd, uint32_t index, char *buf, size_t size)
{
	struct ponyfuse_layout_member_arg m = { .version = PONYFUSE_LAYOUT_VERSION, .index = index };

	buf[0] = 0;
	if (index != UINT32_MAX && ioctl(fd, PONYFUSE_IOC_LAYOUT_MEMBER, &m) == 0)
		snprintf(buf, size, "%s", m.device);
}

/* The output of one resolved address, for people or as a JSON object's fields. */
static void resolve_print(int fd, const struct ponyfuse_resolve_arg *a, struct util_json *j)
{
	char dev[256];
	const char *p = a->paths;

	member_device(fd, a->member, dev, sizeof(dev));
	if (j) {
		util_json_uint(j, "volume_offset", a->volume_offset);
		if (a->member != UINT32_MAX) {
			util_json_uint(j, "member", a->member);
			util_json_string(j, "device", dev);
			util_json_uint(j, "member_offset", a->member_offset);
			util_json_uint(j, "member_sector", a->member_offset / 512);
			util_json_string(j, "role", name_of(role_names, 4, a->role));
		}
		util_json_string(j, "what", name_of(what_names, 5, a->what));
		if (a->what == 0 || a->what == 1)
			util_json_uint(j, "block", a->block);
		if (a->what == 1) {
			util_json_uint(j, "inode", a->ino);
			util_json_uint(j, "file_offset", a->file_offset);
			util_json_uint(j, "npaths", a->npaths);
			util_json_array_begin(j, "paths");
			for (uint32_t i = 0; i < a->npaths && *p; i++, p += strlen(p) + 1)
				util_json_string(j, NULL, p);
			util_json_array_end(j);
		} else if (a->what == 2) {
			util_json_string(j, "part", name_of(meta_names, 5, a->meta));
			if (a->meta == 2 || a->meta == 3)
				util_json_uint(j, a->meta == 2 ? "page" : "frame", a->page);
		} else if (a->what == 3) {
			util_json_uint(j, "row_length", a->row_length);
		}
		return;
	}
	printf("volume %" PRIu64, a->volume_offset);
	if (a->member != UINT32_MAX)
		printf(" (member %u %s sector %" PRIu64 ", %s)", a->member, dev[0] ? dev : "(missing)",
		       a->member_offset / 512, name_of(role_names, 4, a->role));
	switch (a->what) {
	case 0: printf(": free (data block %" PRIu64 ")\n", a->block); break;
	case 1:
		printf(": file offset %" PRIu64 " of inode %" PRIu64 ":", a->file_offset, a->ino);
		for (uint32_t i = 0; i < a->npaths && *p; i++, p += strlen(p) + 1)
			printf(" %s", p);
		if (!a->npaths)
			printf(" (no path: an unlinked file still open)");
		printf("\n");
		break;
	case 2:
		printf(": metadata, %s", name_of(meta_names, 5, a->meta));
		if (a->meta == 2 || a->meta == 3)
			printf(" %s %" PRIu64, a->meta == 2 ? "page" : "frame", a->page);
		printf("\n");
		break;
	case 3:
		printf(": parity of the stripe row at volume %" PRIu64 "+%" PRIu64 "\n",
		       a->volume_offset, a->row_length);
		break;
	default: printf(": in no region of the filesystem\n"); break;
	}
}

/* MEMBER (an index or a member's device) of the mount's volume; -1: no such member. */
static int member_find(int fd, const char *text)
{
	struct ponyfuse_layout_member_arg m = { .version = PONYFUSE_LAYOUT_VERSION };
	char *end;
	unsigned long i = strtoul(text, &end, 10);

	if (*text && !*end && text[0] != '-') {
		m.index = (uint32_t)MIN(i, (unsigned long)UINT32_MAX);
		return ioctl(fd, PONYFUSE_IOC_LAYOUT_MEMBER, &m) == 0 ? (int)m.index : -1;
	}
	for (m.index = 0; ioctl(fd, PONYFUSE_IOC_LAYOUT_MEMBER, &m) == 0 && m.index < m.nmembers;
	     m.index++) {
		if (!strcmp(m.device, text))
			return (int)m.index;
		m.version = PONYFUSE_LAYOUT_VERSION;
	}
	return -1;
}

/* VOLUME_OFFSET or MEMBER:SECTOR into a. */
static int address_parse(int fd, const char *cmd, const char *text, struct ponyfuse_resolve_arg *a)
{
	const char *colon = strrchr(text, ':');
	char *end;
	int m;

	errno = 0;
	if (!colon) {
		a->volume_offset = strtoull(text, &end, 0);
		if (errno || *end || !*text || text[0] == '-')
			return cli_usage_error(cmd, "bad address '%s': a volume byte offset or "
					       "MEMBER:SECTOR is wanted", text);
		return 0;
	}
	a->flags = PONYFUSE_RESOLVE_BY_MEMBER;
	a->member_offset = strtoull(colon + 1, &end, 0) * 512;
	if (errno || *end || !colon[1] || colon[1] == '-')
		return cli_usage_error(cmd, "bad sector in '%s': MEMBER:SECTOR (512-byte sectors "
				       "of the member's device) is wanted", text);
	char member[512];

	snprintf(member, sizeof(member), "%.*s", (int)(colon - text), text);
	m = member_find(fd, member);
	if (m < 0)
		return cli_usage_error(cmd, "bad member '%s' in '%s': neither a member index nor "
				       "a member device of this mount", member, text);
	a->member = (uint32_t)m;
	return 0;
}

/* --json and --help only; the remaining arguments from *ret_optind. -1: help printed. */
static int json_opts(const char *cmd, const char *help, int argc, char **argv, bool *json)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "jh", longopts, NULL)) != -1) {
		switch (c) {
		case 'j': *json = true; break;
		case 'h': fputs(help, stdout); return -1;
		default: return cli_usage_error(cmd, "bad option");
		}
	}
	return 0;
}

#define RESOLVE "pony fs resolve"
static int fs_resolve_run(int argc, char **argv)
{
	struct ponyfuse_resolve_arg *a = calloc(1, sizeof(*a));
	_cleanup_(closep) int fd = -1;
	struct util_json j;
	bool json = false;
	int r = a ? json_opts(RESOLVE, "Usage: " RESOLVE " MNT VOLUME_OFFSET|MEMBER:SECTOR [--json]\n"
			      "What lives at one address of the pony mount MNT's volume: a file\n"
			      "(its inode, file offset and every path), metadata (which part, the\n"
			      "SQLite page or WAL frame), free space, or parity. VOLUME_OFFSET is a\n"
			      "byte of the volume (on one image: of the image); MEMBER:SECTOR a\n"
			      "512-byte sector of a member's device, MEMBER its index or device.\n",
			      argc, argv, &json) : cli_error("out of memory");

	if (!r && optind != argc - 2)
		r = cli_usage_error(RESOLVE, "MNT and an address are needed");
	if (!r)
		r = mount_open(RESOLVE, argv[optind], &fd);
	if (!r)
		r = address_parse(fd, RESOLVE, argv[optind + 1], a);
	if (!r) {
		a->version = PONYFUSE_SCRUB_VERSION;
		if (ioctl(fd, PONYFUSE_IOC_RESOLVE, a) < 0)
			r = scrub_error(RESOLVE, argv[optind], errno);
	}
	if (!r && json) {
		util_json_init(&j, stdout);
		util_json_object_begin(&j, NULL);
		resolve_print(fd, a, &j);
		util_json_object_end(&j);
		util_json_end(&j);
	} else if (!r) {
		resolve_print(fd, a, NULL);
	}
	free(a);
	return r < 0 ? CLI_EXIT_OK : r;
}

#define BADBLOCKS "pony fs badblocks"
static int fs_badblocks_run(int argc, char **argv)
{
	struct ponyfuse_badblock_arg *a = calloc(1, sizeof(*a));
	_cleanup_(closep) int fd = -1;
	struct util_json j;
	bool json = false;
	uint32_t i;
	int r = a ? json_opts(BADBLOCKS, "Usage: " BADBLOCKS " MNT [--json]\n"
			      "Every known bad or repaired region of the pony mount MNT: its members'\n"
			      "bad-block logs, the checksum mismatches its daemon saw while serving\n"
			      "reads, and scrub's findings; each with its member, member sector, volume\n"
			      "offset and what lives there (paths and file offsets, metadata, free).\n",
			      argc, argv, &json) : cli_error("out of memory");

	if (!r && optind != argc - 1)
		r = cli_usage_error(BADBLOCKS, "one mount point is needed");
	if (!r)
		r = mount_open(BADBLOCKS, argv[optind], &fd);
	if (!r && json) {
		util_json_init(&j, stdout);
		util_json_array_begin(&j, NULL);
	}
	for (i = 0; !r; i++) {
		*a = (struct ponyfuse_badblock_arg){ .version = PONYFUSE_SCRUB_VERSION, .index = i };
		if (ioctl(fd, PONYFUSE_IOC_BADBLOCK, a) < 0) {
			if (errno != ENOENT)
				r = scrub_error(BADBLOCKS, argv[optind], errno);
			break;
		}
		if (json) {
			util_json_object_begin(&j, NULL);
			util_json_string(&j, "source", name_of(source_names, 4, a->source));
			util_json_bool(&j, "repaired", a->repaired);
			util_json_uint(&j, "length", a->length);
			resolve_print(fd, &a->where, &j);
			util_json_object_end(&j);
		} else {
			printf("%s, %s, %" PRIu64 " bytes: ", name_of(source_names, 4, a->source),
			       a->repaired ? "repaired" : "not repaired", a->length);
			resolve_print(fd, &a->where, NULL);
		}
	}
	if (!r && json) {
		util_json_array_end(&j);
		util_json_end(&j);
	} else if (!r && !i) {
		printf("no bad blocks known\n");
	}
	free(a);
	return r < 0 ? CLI_EXIT_OK : r;
}

/* "1h02m", "3m05s", "12s". */
static void duration(uint64_t s, char *buf, size_t size)
{
	if (s >= 3600)
		snprintf(buf, size, "%" PRIu64 "h%02" PRIu64 "m", s / 3600, s / 60 % 60);
	else if (s >= 60)
		snprintf(buf, size, "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
	else
		snprintf(buf, size, "%" PRIu64 "s", s);
}

static void scrub_print(const char *mnt, const struct ponyfuse_scrub_arg *a)
{
	double pct = a->total ? 100.0 * (double)a->position / (double)a->total : 0;
	char took[32], eta[32] = "?";

	duration(a->elapsed_ms / 1000, took, sizeof(took));
	switch (a->state) {
	case 0:
		printf("%s: idle: no scrub has run since the filesystem was made\n", mnt);
		return;
	case 1:
		if (a->position && a->elapsed_ms)
			duration((uint64_t)((double)(a->total - a->position) * (double)a->elapsed_ms /
					    1000.0 / (double)a->position), eta, sizeof(eta));
		printf("running %.0f%% (%" PRIu64 " of %" PRIu64 " bytes), ETA %s: ", pct,
		       a->position, a->total, eta);
		break;
	case 2:
		printf("stopped at %.0f%% (%" PRIu64 " of %" PRIu64 " bytes; start goes on from "
		       "there): ", pct, a->position, a->total);
		break;
	case 3:
		printf("done%s%s: ", a->elapsed_ms ? " in " : "", a->elapsed_ms ? took : "");
		break;
	default:
		printf("failed at %.0f%%: %s: ", pct, strerror(-a->error));
		break;
	}
	printf("%" PRIu64 " blocks checked, %" PRIu64 " repaired, %" PRIu64 " lost\n", a->checked,
	       a->repaired, a->lost);
}

#define SCRUB "pony fs scrub"
static int scrub_opts(int argc, char **argv, uint64_t *rate, bool *wait)
{
	static const struct option longopts[] = {
		{ "rate", required_argument, NULL, 'r' },
		{ "wait", no_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	uint64_t mbs;
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "r:wh", longopts, NULL)) != -1) {
		switch (c) {
		case 'r':
			if ((r = cli_parse_uint(SCRUB, "--rate", optarg, 1, 1000000, &mbs)))
				return r;
			*rate = mbs * 1000000;
			break;
		case 'w': *wait = true; break;
		case 'h':
			printf("Usage: " SCRUB " start|status|stop MNT [--rate MB/s] [--wait]\n"
			       "The passive scrub of the pony mount MNT (docs/scrub.md): its daemon\n"
			       "reads every block of the metadata and of every file in volume order,\n"
			       "checks checksums, mirrors and parity, repairs from redundancy what it\n"
			       "can and names the files it cannot repair. It backs off while reads are\n"
			       "served, keeps its position in the filesystem (stop, unmount or a crash:\n"
			       "start goes on from there) and runs at most --rate MB/s (10^6 bytes;\n"
			       "default: no limit). status: running with progress and ETA, stopped,\n"
			       "or done with the blocks checked, repaired and lost. --wait: start\n"
			       "returns when the pass is over, with its status.\n");
			return -1;
		default: return cli_usage_error(SCRUB, "bad option");
		}
	}
	return 0;
}

static int fs_scrub_run(int argc, char **argv)
{
	struct ponyfuse_scrub_arg a = { .version = PONYFUSE_SCRUB_VERSION };
	_cleanup_(closep) int fd = -1;
	uint64_t rate = 0;
	bool wait = false;
	const char *op, *mnt;
	int r = scrub_opts(argc, argv, &rate, &wait);

	if (r)
		return r < 0 ? CLI_EXIT_OK : r;
	if (optind != argc - 2)
		return cli_usage_error(SCRUB, "start, status or stop and a mount point are needed");
	op = argv[optind];
	mnt = argv[optind + 1];
	if (!strcmp(op, "start"))
		a.op = 1;
	else if (!strcmp(op, "stop"))
		a.op = 2;
	else if (strcmp(op, "status"))
		return cli_usage_error(SCRUB, "unknown action '%s': start, status or stop", op);
	if (rate && a.op != 1)
		return cli_usage_error(SCRUB, "--rate is for start");
	if (wait && a.op != 1)
		return cli_usage_error(SCRUB, "--wait is for start");
	r = mount_open(SCRUB, mnt, &fd);
	if (r)
		return r;
	a.rate = rate;
	if (ioctl(fd, PONYFUSE_IOC_SCRUB, &a) < 0)
		return scrub_error(SCRUB, mnt, errno);
	while (wait && a.state == 1) {
		nanosleep(&(struct timespec){ .tv_nsec = 100000000 }, NULL);
		a = (struct ponyfuse_scrub_arg){ .version = PONYFUSE_SCRUB_VERSION };
		if (ioctl(fd, PONYFUSE_IOC_SCRUB, &a) < 0)
			return scrub_error(SCRUB, mnt, errno);
	}
	scrub_print(mnt, &a);
	return a.state == 4 ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
}

const struct cli_command cli_fs_resolve_command = {
	.name = "resolve",
	.summary = "what lives at a volume offset or member sector: file, metadata, free",
	.run = fs_resolve_run,
};
const struct cli_command cli_fs_badblocks_command = {
	.name = "badblocks",
	.summary = "every known bad or repaired region, with the files it hits",
	.run = fs_badblocks_run,
};
const struct cli_command cli_fs_scrub_command = {
	.name = "scrub",
	.summary = "the passive scrub: start, status, stop",
	.run = fs_scrub_run,
};
