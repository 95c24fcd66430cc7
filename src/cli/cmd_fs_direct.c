/*
 * cmd_fs_direct.c - `pony fs cat [--direct] FILE`: a file of a pony mount
 * to stdout, through the mount, or with --direct straight from the
 * volume's members through libpony-layout (include/pony/layout.h): the
 * command people use to check, and benchmarks time, that the direct
 * reader returns the same bytes as the mount. With --server, from another
 * host: the layout from the mount's layout service, the bytes from the
 * members' NBD servers.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "pony/layout.h"
#include "pony/util.h"

#define CMD "pony fs cat"
#define CAT_CHUNK (16u << 20)           /* bytes a read asks for: many pieces in flight */

static int write_all(const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(STDOUT_FILENO, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return cli_error("writing to stdout: %s", strerror(errno));
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Through the mount, as cat(1) would. */
static int cat_mount(int fd, const char *path, void *buf)
{
	for (uint64_t off = 0;;) {
		ssize_t n = pread(fd, buf, CAT_CHUNK, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return cli_error("%s: read at %" PRIu64 ": %s", path, off, strerror(errno));
		if (!n)
			return 0;
		if (write_all(buf, (size_t)n))
			return CLI_EXIT_FAILURE;
		off += (uint64_t)n;
	}
}

static int read_error(const char *path, uint64_t off, int err)
{
	if (err == EIO)
		return cli_error("%s: a block at or after %" PRIu64 " is lost beyond the volume's "
				 "redundancy", path, off);
	if (err == ESTALE)
		return cli_error("%s: the file kept changing while it was read; try again", path);
	if (err == EAGAIN)
		return cli_error("%s: data at or after %" PRIu64 " is still cached in the mount's "
				 "daemon, not on the members: pony sync it on its host and try "
				 "again", path, off);
	return cli_error("%s: direct read at %" PRIu64 ": %s", path, off, strerror(err));
}

static void print_stats(const char *path, const struct pony_layout *l)
{
	struct pony_layout_stats st;

	pony_layout_stats(l, &st);
	fprintf(stderr, "%s: %" PRIu64 " bytes from members, %" PRIu64 " through the mount, %"
		PRIu64 " zeros, %" PRIu64 " blocks rebuilt, %" PRIu64 " layouts got again\n", path,
		st.member_bytes, st.mount_bytes, st.zero_bytes, st.rebuilt, st.regets);
}

/* Members read around: their names led to devices that are not them. */
static void warn_refused(const char *path, const struct pony_layout *l)
{
	struct pony_layout_stats st;

	pony_layout_stats(l, &st);
	if (st.members_refused)
		fprintf(stderr, "pony: %s: %" PRIu64 " member(s) not read: the device the name "
			"leads to carries another member's superblock; their blocks were rebuilt "
			"from the others\n", path, st.members_refused);
}

/* Why a layout service did not give a layout. */
static int remote_error(const struct pony_layout_server *s, const char *path, int err)
{
	switch (err) {
	case EACCES:
		return cli_error("%s: refused: %s (a wrong key, or the file is encrypted: keys "
				 "never leave the mount)", s->addr, path);
	case ENXIO:
		return cli_error("%s: the filesystem is on one image, not a pony volume: no "
				 "members to read from this host", path);
	case ECONNRESET:
		return cli_error("%s: the layout service closed the connection (it may need TLS: "
				 "--psk FILE)", s->addr);
	case ETIMEDOUT:
		return cli_error("%s: the layout service did not answer", s->addr);
	case ENOENT: case ENOTDIR: case EISDIR: case EOPNOTSUPP:
		return cli_layout_error(path, err);
	default:
		return cli_error("%s: %s: %s", s->addr, path, strerror(err));
	}
}

/* Straight from the members, through the layout (from s when not NULL). */
static int cat_direct(int fd, const struct pony_layout_server *s, const char *path, void *buf,
		      bool stats)
{
	struct pony_layout *l;
	int r = s ? pony_layout_get_remote(s, path, 0, UINT64_MAX, &l) :
		pony_layout_get(fd, 0, UINT64_MAX, &l);

	if (r < 0)
		return s ? remote_error(s, path, -r) : cli_layout_error(path, -r);
	for (uint64_t off = 0; !r;) {
		ssize_t n = pony_layout_read(l, buf, off, CAT_CHUNK);

		if (n < 0)
			r = read_error(path, off, (int)-n);
		else if (!n)
			break;
		else
			r = write_all(buf, (size_t)n) ? CLI_EXIT_FAILURE : 0;
		off += n > 0 ? (uint64_t)n : 0;
	}
	if (stats)
		print_stats(path, l);
	warn_refused(path, l);
	pony_layout_return(l);
	return r;
}

static int fs_cat_run(int argc, char **argv)
{
	bool direct = false, stats = false, insecure = false;
	struct pony_layout_server server = { .member_timeout_ms = cli_member_timeout_ms() };
	const char *path;
	int c, r;

	static const struct option longopts[] = {
		{ "direct", no_argument, NULL, 'd' },
		{ "stats", no_argument, NULL, 's' },
		{ "server", required_argument, NULL, 'S' },
		{ "psk", required_argument, NULL, 'k' },
		{ "insecure", no_argument, NULL, 'I' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	optind = 1;
	while ((c = getopt_long(argc, argv, "dsh", longopts, NULL)) != -1) {
		switch (c) {
		case 'd': direct = true; break;
		case 's': stats = true; break;
		case 'S': server.addr = optarg; break;
		case 'k': server.psk_file = optarg; break;
		case 'I': insecure = true; break;
		case 'h':
			printf("Usage: " CMD " [--direct [--stats]] FILE\n"
			       "       " CMD " --direct --server HOST:PORT --psk FILE|--insecure\n"
			       "           [--stats] PATH\n"
			       "FILE, a file of a pony mount, to stdout. Through the mount, or with\n"
			       "--direct straight from the volume's members by its layout\n"
			       "(docs/layout.md): every piece read in parallel, every block checked\n"
			       "against its CRC32C, and what a missing member or a bad block leaves\n"
			       "out rebuilt from the volume's copies or parity; holes read as zeros,\n"
			       "data the daemon still caches through the mount. Encrypted files are\n"
			       "refused: keys never leave the mount. --stats tells on stderr where\n"
			       "the bytes came from and how many blocks were rebuilt.\n"
			       "\n"
			       "With --server, on another host: the layout of PATH (from the mount's\n"
			       "root) comes from the mount's layout service (pony mount\n"
			       "--layout-listen), in TLS with the first key of --psk FILE, or in the\n"
			       "clear with --insecure; the bytes come from the members' NBD servers\n"
			       "(nbds:// members with the same key file). --member-timeout SECONDS\n"
			       "bounds each member's connection and reads (docs/nbd.md).\n");
			return CLI_EXIT_OK;
		default: return cli_usage_error(CMD, "bad option");
		}
	}
	if (optind != argc - 1)
		return cli_usage_error(CMD, "one FILE is needed");
	if (stats && !direct)
		return cli_usage_error(CMD, "--stats goes with --direct");
	if (server.addr && !direct)
		return cli_usage_error(CMD, "--server goes with --direct");
	if ((server.psk_file || insecure) && !server.addr)
		return cli_usage_error(CMD, "--psk and --insecure go with --server");
	if (server.addr && !server.psk_file == !insecure)
		return cli_usage_error(CMD, "--server needs --psk FILE or --insecure (one of them)");
	path = argv[optind];
	_cleanup_(freep) void *buf = util_aligned_alloc(CAT_CHUNK);
	if (!buf)
		return cli_error("out of memory");
	if (server.addr) {
		r = cat_direct(-1, &server, path, buf, stats);
		return r ? r : CLI_EXIT_OK;
	}
	_cleanup_(closep) int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return cli_path_error(path, errno);
	r = direct ? cat_direct(fd, NULL, path, buf, stats) : cat_mount(fd, path, buf);
	return r ? r : CLI_EXIT_OK;
}

const struct cli_command cli_fs_cat_command = {
	.name = "cat",
	.summary = "a file to stdout, through the mount or --direct from its members",
	.run = fs_cat_run,
};
