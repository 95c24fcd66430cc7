/*
 * ponyfs_populate.c - fills a ponyfs image with N empty files fast, for
 * bench/ponyfs's scale row (an untar into a filesystem that already holds
 * 100,000 or 1,000,000 files). Through FUSE that many creates would take
 * longer than the measurement itself; here the image is mounted in this
 * process (libpony, no FUSE, no kernel round trip) and the files are made
 * with the vfs calls the FUSE front end would make, then committed. They
 * are empty regular files, mode 0644, in directories of PER (1000 unless
 * --per) under /pre: pre/dNNNNN/fNNNNNNNN. A commit every 10,000 files
 * keeps each transaction (and the WAL) small, as the daemon's timer would.
 *
 * Usage: ponyfs_populate [--per PER] IMG N (IMG unmounted; it is locked as
 * pony mount locks it). Prints one "# populated ..." line; exit 0, 1 when
 * the image cannot be filled, 2 for bad usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "pony/bdev.h"
#include "pony/ponyfs.h"
#include "pony/util.h"
#include "pony/vfs.h"

#define COMMIT_EVERY 10000

/* A count argument: 1 up to 10^9, else 0 (said on stderr). */
static unsigned long arg_count(const char *what, const char *v)
{
	char *end;
	unsigned long n;

	errno = 0;
	n = strtoul(v, &end, 10);
	if (errno || end == v || *end || v[0] == '-' || n < 1 || n > 1000000000ul) {
		fprintf(stderr, "ponyfs_populate: bad %s '%s': a whole number from 1\n", what, v);
		return 0;
	}
	return n;
}

/* mkdir or mknod of name in parent; on 0, *ret_ino is the new inode (its
 * reference is the caller's to forget). */
static int make(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t parent, const char *name,
		mode_t mode, uint64_t *ret_ino)
{
	struct vfs_entry e;
	int r = S_ISDIR(mode) ? VFS_CALL(fs, mkdir, ctx, parent, name, mode, &e)
			      : VFS_CALL(fs, mknod, ctx, parent, name, mode, 0, &e);

	if (r == 0)
		*ret_ino = e.ino;
	return r;
}

/* The files of /pre, PER a directory, committed every COMMIT_EVERY. */
static int populate(struct vfs *fs, unsigned long n, unsigned long per)
{
	struct vfs_ctx ctx;
	uint64_t pre = 0, dir = 0, ino;
	char name[32];
	int r;

	vfs_ctx_self(&ctx);
	r = make(fs, &ctx, VFS_ROOT_INO, "pre", S_IFDIR | 0755, &pre);
	for (unsigned long i = 0; i < n && r == 0; i++) {
		if (i % per == 0) {
			if (dir)
				VFS_FORGET(fs, dir, 1);
			snprintf(name, sizeof(name), "d%05lu", i / per);
			r = make(fs, &ctx, pre, name, S_IFDIR | 0755, &dir);
			if (r < 0)
				break;
		}
		snprintf(name, sizeof(name), "f%08lu", i);
		r = make(fs, &ctx, dir, name, S_IFREG | 0644, &ino);
		if (r == 0)
			VFS_FORGET(fs, ino, 1);
		if (r == 0 && (i + 1) % COMMIT_EVERY == 0)
			r = VFS_CALL(fs, syncfs);
	}
	if (dir)
		VFS_FORGET(fs, dir, 1);
	if (pre)
		VFS_FORGET(fs, pre, 1);
	return r < 0 ? r : VFS_CALL(fs, syncfs);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "per", required_argument, NULL, 'p' },
		{ 0 },
	};
	struct ponyfs_options po = { .commit_ms = 0 };
	unsigned long n, per = 1000;
	struct bdev *dev = NULL;
	struct vfs *fs = NULL;
	const char *what = "cannot populate";
	uint64_t t0;
	int c, fd, r;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (c != 'p' || !(per = arg_count("--per", optarg)))
			goto usage;
	}
	if (optind != argc - 2 || !(n = arg_count("N", argv[optind + 1])))
		goto usage;
	fd = open(argv[optind], O_RDONLY | O_CLOEXEC);
	if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0) {
		fprintf(stderr, "ponyfs_populate: %s: %s\n", argv[optind],
			fd < 0 ? strerror(errno) : "in use by a pony mount");
		return 1;
	}
	t0 = util_now_ns();
	r = bdev_file_open(argv[optind], O_RDWR, &dev);
	if (r == 0)
		r = ponyfs_mount_image(dev, &po, &fs);
	if (r < 0)
		what = r == -EINVAL || r == -EUCLEAN ? "cannot mount (not a ponyfs: pony mkfs it)"
						     : "cannot mount";
	else
		r = populate(fs, n, per);
	vfs_free(fs);           /* commits what is left, and unmounts */
	bdev_free(dev);
	close(fd);
	if (r < 0) {
		fprintf(stderr, "ponyfs_populate: %s: %s: %s\n", argv[optind], what, strerror(-r));
		return 1;
	}
	printf("# populated %s with %lu files in %lu directories: %.1f s\n", argv[optind], n,
	       (n + per - 1) / per, (double)(util_now_ns() - t0) / 1e9);
	return 0;
usage:
	fprintf(stderr, "usage: ponyfs_populate [--per PER] IMG N\n");
	return 2;
}
