/*
 * acall_mlock.c - keeps a file in the page cache while a benchmark runs:
 * maps it, faults it in and mlock()s it, says "locked" on stdout, then
 * sleeps until it is killed. This machine's host drops the page cache every
 * 10-20 s; page-cache benchmarks would otherwise measure the disk.
 * Given a directory, it holds an O_PATH descriptor on every entry in it and
 * one level down instead: an open file pins its dentry and inode, which a
 * cache drop would otherwise evict (the statx benchmark's tree).
 *
 *   acall_mlock FILE|DIR &   (wait for "locked", run, kill it)
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define PIN_PROCS 8        /* the fd limit here is 20,000 a process */

/* Opens (and leaks, on purpose) every entry of dfd whose running index is
 * this process's share, recursing once. */
static long pin_dir(int dfd, int depth, unsigned share, long *idx)
{
	DIR *d = fdopendir(dfd);
	struct dirent *e;
	long n = 0;

	while (d && (e = readdir(d))) {
		int fd;

		if (e->d_name[0] == '.')
			continue;
		if (e->d_type == DT_DIR && depth > 0) {
			fd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY);
			if (fd >= 0)
				n += pin_dir(fd, depth - 1, share, idx);
		}
		if ((*idx)++ % PIN_PROCS != share)
			continue;
		fd = openat(dirfd(d), e->d_name, O_PATH);
		if (fd < 0)
			return -1;
		n++;
	}
	return n;       /* d stays open too: it pins the directory */
}

/* PIN_PROCS children each pin a share; they die with this process. */
static int pin_tree(const char *path)
{
	int p[2];
	char c;

	if (pipe(p) < 0)
		return 1;
	for (unsigned k = 0; k < PIN_PROCS; k++) {
		if (fork() == 0) {
			struct rlimit rl;
			long idx = 0;
			int fd;

			prctl(PR_SET_PDEATHSIG, SIGKILL);
			getrlimit(RLIMIT_NOFILE, &rl);
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
			fd = open(path, O_RDONLY | O_DIRECTORY);
			if (fd < 0 || pin_dir(fd, 1, k, &idx) < 0) {
				perror(path);
				_exit(1);
			}
			if (write(p[1], "", 1) != 1)
				_exit(1);
			for (;;)
				pause();
		}
	}
	for (unsigned k = 0; k < PIN_PROCS; k++)
		if (read(p[0], &c, 1) != 1)
			return 1;
	printf("locked\n");
	fflush(stdout);
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	struct stat st;
	void *map;
	int fd;

	if (argc != 2) {
		fprintf(stderr, "usage: acall_mlock FILE\n");
		return 2;
	}
	fd = open(argv[1], O_RDONLY);
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode))
		return pin_tree(argv[1]);
	if (fd < 0 || fstat(fd, &st) < 0 || !st.st_size) {
		perror(argv[1]);
		return 1;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
	if (map == MAP_FAILED || mlock(map, (size_t)st.st_size) < 0) {
		perror("mmap/mlock");
		return 1;
	}
	printf("locked\n");
	fflush(stdout);
	for (;;)
		pause();
}
