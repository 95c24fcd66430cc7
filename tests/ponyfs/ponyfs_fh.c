/*
 * ponyfs_fh.c - a test helper for file handles on a mount:
 *   ponyfs_fh encode PATH        prints PATH's handle (name_to_handle_at) as hex
 *   ponyfs_fh open MNT HEX       opens the handle (open_by_handle_at) and copies
 *                                the file to stdout, or lists a directory's names
 * The exit status is 0, or the errno of the call that failed (ESTALE: 116),
 * so a shell test can tell a stale handle from any other failure.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HANDLE_MAX 128

static int encode(const char *path)
{
	struct file_handle *fh = malloc(sizeof(*fh) + HANDLE_MAX);
	int mount_id;

	if (!fh)
		return ENOMEM;
	fh->handle_bytes = HANDLE_MAX;
	if (name_to_handle_at(AT_FDCWD, path, fh, &mount_id, 0) < 0) {
		int e = errno;

		perror("name_to_handle_at");
		free(fh);
		return e;
	}
	printf("%08x", (unsigned)fh->handle_type);
	for (unsigned i = 0; i < fh->handle_bytes; i++)
		printf("%02x", fh->f_handle[i]);
	printf("\n");
	free(fh);
	return 0;
}

static int list(int fd)
{
	DIR *d = fdopendir(fd);
	struct dirent *de;

	if (!d)
		return errno;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			printf("%s\n", de->d_name);
	closedir(d);
	return 0;
}

static int open_handle(const char *mnt, const char *hex)
{
	size_t len = strlen(hex);
	struct file_handle *fh = malloc(sizeof(*fh) + HANDLE_MAX);
	char buf[65536];
	unsigned type;
	ssize_t n;
	int mfd, fd, e = 0;

	if (!fh || len < 8 || len % 2 || (len - 8) / 2 > HANDLE_MAX ||
	    sscanf(hex, "%8x", &type) != 1) {
		free(fh);
		return EINVAL;
	}
	fh->handle_type = (int)type;
	fh->handle_bytes = (unsigned)(len - 8) / 2;
	for (unsigned i = 0; i < fh->handle_bytes; i++)
		sscanf(hex + 8 + 2 * i, "%2hhx", &fh->f_handle[i]);
	mfd = open(mnt, O_RDONLY | O_DIRECTORY);
	if (mfd < 0) {
		free(fh);
		return errno;
	}
	fd = open_by_handle_at(mfd, fh, O_RDONLY);
	if (fd < 0) {
		e = errno;
		fprintf(stderr, "open_by_handle_at: %s\n", strerror(e));
	}
	close(mfd);
	free(fh);
	if (fd < 0)
		return e;
	{
		struct stat st;

		if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode))
			return list(fd);
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		fwrite(buf, 1, (size_t)n, stdout);
	e = n < 0 ? errno : 0;
	close(fd);
	return e;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "encode"))
		return encode(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "open"))
		return open_handle(argv[2], argv[3]);
	fprintf(stderr, "usage: ponyfs_fh encode PATH | ponyfs_fh open MNT HEX\n");
	return 2;
}
