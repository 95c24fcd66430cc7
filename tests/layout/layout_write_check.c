/*
 * layout_write_check.c - what layout_direct_write.sh cannot do with the
 * CLI: a direct write whose lease runs out before its commit, and commits
 * the daemon must refuse, made with the raw ioctls.
 *
 *   layout_write_check expire FILE SRC MS
 *	writes SRC into FILE directly, sleeps MS milliseconds (the mount's
 *	lease is shorter), commits: exit 0 when the commit fails ESTALE.
 *   layout_write_check foreign FILE
 *	a commit of stripes another lease was given, of stripes nobody was
 *	given, on a lease that does not exist, and a grant on a read-only
 *	descriptor: exit 0 when each is refused (EPERM, EPERM, ESTALE,
 *	EBADF) and nothing was applied.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pony/fuse.h"
#include "pony/layout.h"

static int expire(const char *file, const char *src, long ms)
{
	struct pony_layout_writer *w;
	struct stat st;
	int fd = open(file, O_WRONLY), sfd = open(src, O_RDONLY);
	void *buf;
	int r;

	if (fd < 0 || sfd < 0 || fstat(sfd, &st) < 0 || !(buf = malloc((size_t)st.st_size + 1)) ||
	    read(sfd, buf, (size_t)st.st_size) != st.st_size) {
		perror("expire: setup");
		return 2;
	}
	r = pony_layout_write_open(fd, &w);
	if (r < 0 || pony_layout_write(w, buf, 0, (size_t)st.st_size) != st.st_size) {
		fprintf(stderr, "expire: direct write failed: %s\n", strerror(-r));
		return 2;
	}
	nanosleep(&(struct timespec){ .tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000 }, NULL);
	r = pony_layout_commit(w, (uint64_t)st.st_size);
	printf("commit after %ld ms: %s\n", ms, r ? strerror(-r) : "applied");
	free(buf);
	close(fd);
	close(sfd);
	return r == -ESTALE ? 0 : 1;
}

static int grant(int fd, uint32_t lease, struct ponyfuse_layout_write_arg *a)
{
	*a = (struct ponyfuse_layout_write_arg){ .version = PONYFUSE_LAYOUT_VERSION, .offset = 0,
						  .length = 4096, .lease = lease };
	return ioctl(fd, PONYFUSE_IOC_LAYOUT_WRITE, a) < 0 ? -errno : 0;
}

/* A LAST commit of one block of FILE at volume byte vo on lease: -errno or 0. */
static int commit_one(int fd, uint32_t lease, uint64_t vo)
{
	static struct ponyfuse_layout_commit_arg a;

	a = (struct ponyfuse_layout_commit_arg){
		.version = PONYFUSE_LAYOUT_VERSION, .flags = PONYFUSE_COMMIT_LAST, .lease = lease,
		.nextents = 1, .ncsums = 1, .size = 4096,
		.extents = { { .file_offset = 0, .length = 4096, .volume_offset = vo } },
	};
	return ioctl(fd, PONYFUSE_IOC_LAYOUT_COMMIT, &a) < 0 ? -errno : 0;
}

static int expect(const char *what, int got, int want)
{
	printf("%s: %s\n", what, got ? strerror(-got) : "accepted");
	return got == want ? 0 : 1;
}

static int foreign(const char *file)
{
	struct ponyfuse_layout_write_arg *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
	int fd = open(file, O_RDWR), rofd = open(file, O_RDONLY), bad = 0;

	if (!a || !b || fd < 0 || rofd < 0 || grant(fd, PONYFUSE_LEASE_NEW, a) < 0 ||
	    grant(fd, PONYFUSE_LEASE_NEW, b) < 0 || a->lease == b->lease) {
		perror("foreign: setup");
		return 2;
	}
	bad |= expect("another lease's stripes", commit_one(fd, a->lease, b->volume_offset), -EPERM);
	bad |= expect("stripes never handed out", commit_one(fd, a->lease, a->volume_offset +
							      a->granted + 7 * b->granted), -EPERM);
	bad |= expect("an unknown lease", commit_one(fd, 0x7654321, a->volume_offset), -ESTALE);
	bad |= expect("a grant on a read-only descriptor", grant(rofd, PONYFUSE_LEASE_NEW, b),
		      -EBADF);
	free(a);
	free(b);
	close(fd);
	close(rofd);
	return bad;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "expire"))
		return expire(argv[2], argv[3], atol(argv[4]));
	if (argc == 3 && !strcmp(argv[1], "foreign"))
		return foreign(argv[2]);
	fprintf(stderr, "usage: layout_write_check expire FILE SRC MS | foreign FILE\n");
	return 2;
}
