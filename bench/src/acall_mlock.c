/*
 * acall_mlock.c - keeps a file in the page cache while a benchmark runs:
 * maps it, faults it in and mlock()s it, says "locked" on stdout, then
 * sleeps until it is killed. This machine's host drops the page cache every
 * 10-20 s; page-cache benchmarks would otherwise measure the disk.
 *
 *   acall_mlock FILE &   (wait for "locked", run, kill it)
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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
