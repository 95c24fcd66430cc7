/*
 * cmd_fs_put.c - `pony fs put [--direct] SRC FILE`: SRC's bytes become
 * FILE's, a file of a pony mount. Through the mount (written, then
 * fsync'd), or with --direct straight to the volume's members through
 * libpony-layout's direct writer (include/pony/layout.h): fresh stripes,
 * data and parity written by this process, and one commit that makes
 * them FILE's content, all or nothing. The command people use to copy a
 * big file in fast, and the benchmark times against the mount.
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

#define CMD "pony fs put"
#define PUT_CHUNK (16u << 20)           /* bytes read from SRC at a time: whole stripes */

/* Up to len bytes of SRC (read in order: a pipe will do): the count, short
 * only at its end, or -errno. */
static ssize_t read_full(int fd, void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = read(fd, (char *)buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

static int put_error(const char *path, int err)
{
	switch (err) {
	case EACCES: return cli_error("%s is encrypted: keys never leave the mount; write it "
				      "through the mount", path);
	case EBADF: return cli_error("%s: not open for writing", path);
	case ESTALE: return cli_error("%s: the write lease expired before the commit (revoked "
				      "or too slow); nothing changed, try again", path);
	case EPERM: return cli_error("%s: the daemon refused the commit: stripes it did not "
				     "hand out", path);
	case ENOSPC: return cli_error("%s: no whole free stripes left", path);
	default: return cli_layout_error(path, err);
	}
}

/* Through the mount: written, then fsync'd, as cp then sync would. */
static int put_mount(int src, int fd, const char *path, void *buf)
{
	uint64_t off = 0;
	ssize_t n;

	if (ftruncate(fd, 0) < 0)
		return cli_error("%s: %s", path, strerror(errno));
	while ((n = read_full(src, buf, PUT_CHUNK)) > 0) {
		for (ssize_t done = 0, k; done < n; done += k) {
			k = pwrite(fd, (char *)buf + done, (size_t)(n - done), (off_t)(off + done));
			if (k < 0 && errno == EINTR)
				k = 0;
			else if (k < 0)
				return cli_error("%s: write at %" PRIu64 ": %s", path, off + done,
						 strerror(errno));
		}
		off += (uint64_t)n;
	}
	if (n < 0)
		return cli_error("reading the source: %s", strerror((int)-n));
	if (fsync(fd) < 0)
		return cli_error("%s: fsync: %s", path, strerror(errno));
	return 0;
}

/* Straight to the members, then one commit. */
static int put_direct(int src, int fd, const char *path, void *buf)
{
	struct pony_layout_writer *w;
	uint64_t off = 0;
	ssize_t n;
	int r = pony_layout_write_open(fd, &w);

	if (r < 0)
		return put_error(path, -r);
	while ((n = read_full(src, buf, PUT_CHUNK)) > 0) {
		ssize_t m = pony_layout_write(w, buf, off, (size_t)n);

		if (m < 0) {
			pony_layout_write_abort(w);
			return put_error(path, (int)-m);
		}
		off += (uint64_t)n;
		if ((size_t)n < PUT_CHUNK)
			break;
	}
	if (n < 0) {
		pony_layout_write_abort(w);
		return cli_error("reading the source: %s", strerror((int)-n));
	}
	r = pony_layout_commit(w, off);
	return r < 0 ? put_error(path, -r) : 0;
}

static int fs_put_run(int argc, char **argv)
{
	bool direct = false;
	const char *path;
	int c, r;

	static const struct option longopts[] = {
		{ "direct", no_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	optind = 1;
	while ((c = getopt_long(argc, argv, "dh", longopts, NULL)) != -1) {
		switch (c) {
		case 'd': direct = true; break;
		case 'h':
			printf("Usage: " CMD " [--direct] SRC FILE\n"
			       "SRC's bytes (a file, or - for stdin) become FILE's, a file of a pony\n"
			       "mount (made if missing). Through the mount, written then fsync'd; or\n"
			       "with --direct straight to the volume's members (docs/layout.md):\n"
			       "fresh whole stripes handed out under a write lease, data and parity\n"
			       "written by this command, then one commit that makes them FILE's\n"
			       "content and size: FILE is all old or all new, even after a crash.\n"
			       "--direct needs write access to the member devices; encrypted files\n"
			       "are refused (keys never leave the mount).\n");
			return CLI_EXIT_OK;
		default: return cli_usage_error(CMD, "bad option");
		}
	}
	if (optind != argc - 2)
		return cli_usage_error(CMD, "SRC and FILE are needed");
	path = argv[optind + 1];
	_cleanup_(closep) int src = strcmp(argv[optind], "-") ? open(argv[optind], O_RDONLY | O_CLOEXEC) :
				    fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
	if (src < 0)
		return cli_error("%s: %s", argv[optind], strerror(errno));
	_cleanup_(closep) int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
	if (fd < 0)
		return cli_error("%s: %s", path, strerror(errno));
	_cleanup_(freep) void *buf = util_aligned_alloc(PUT_CHUNK);
	if (!buf)
		return cli_error("out of memory");
	r = direct ? put_direct(src, fd, path, buf) : put_mount(src, fd, path, buf);
	return r ? r : CLI_EXIT_OK;
}

const struct cli_command cli_fs_put_command = {
	.name = "put",
	.summary = "a file's bytes into a file of a pony mount, or --direct to its members",
	.run = fs_put_run,
};
