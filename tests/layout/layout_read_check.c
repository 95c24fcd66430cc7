/*
 * layout_read_check.c - FILE's bytes through libpony-layout.so (linked as
 * a program outside pony would link it, through include/pony/layout.h
 * alone) against the same bytes through the mount: the whole file in one
 * read, then many reads at random offsets and lengths (unaligned, across
 * extents and pieces, past the end), every other one by a clone of the
 * layout (pony_layout_clone, as parallel readers use); the clone given back
 * first, the layout reads on under its lease, never got again (a clone
 * that returned the lease it borrowed would make the next read get it
 * again). Exits 0 when every read matched, 1 with the first difference on
 * stderr. Usage: layout_read_check FILE [SEED].
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pony/layout.h"

static int check(struct pony_layout *l, int fd, uint64_t off, size_t len, uint8_t *a, uint8_t *b)
{
	ssize_t got = pony_layout_read(l, a, off, len);
	ssize_t want = pread(fd, b, len, (off_t)off);

	if (got != want) {
		fprintf(stderr, "read %zu at %llu: %zd direct, %zd through the mount (%s)\n", len,
			(unsigned long long)off, got, want, got < 0 ? strerror((int)-got) : "");
		return 1;
	}
	for (ssize_t i = 0; i < got; i++)
		if (a[i] != b[i]) {
			fprintf(stderr, "read %zu at %llu: byte %llu differs\n", len,
				(unsigned long long)off, (unsigned long long)off + (unsigned long long)i);
			return 1;
		}
	return 0;
}

int main(int argc, char **argv)
{
	struct pony_layout *l, *clone;
	struct pony_layout_stats st;
	uint64_t size;
	uint8_t *a, *b;
	int fd, r;

	if (argc < 2) {
		fprintf(stderr, "usage: layout_read_check FILE [SEED]\n");
		return 2;
	}
	srandom(argc > 2 ? (unsigned)atoi(argv[2]) : 1);
	fd = open(argv[1], O_RDONLY);
	if (fd < 0 || (r = pony_layout_get(fd, 0, UINT64_MAX, &l)) < 0) {
		fprintf(stderr, "%s: %s\n", argv[1], strerror(fd < 0 ? errno : -r));
		return 1;
	}
	r = pony_layout_clone(l, &clone);
	if (r < 0) {
		fprintf(stderr, "%s: clone: %s\n", argv[1], strerror(-r));
		return 1;
	}
	size = pony_layout_size(l);
	a = malloc(size + 8192);
	b = malloc(size + 8192);
	r = !a || !b || check(clone, fd, 0, size + 8192, a, b) || check(l, fd, 0, size + 8192, a, b);
	for (int i = 0; i < 300 && !r; i++) {
		uint64_t off = (uint64_t)random() % (size + 100);
		size_t len = (size_t)random() % (i % 3 ? 9000 : 300000) + 1;

		r = check(i % 2 ? clone : l, fd, off, len, a, b);
	}
	pony_layout_return(clone);
	r = r || check(l, fd, 0, size + 8192, a, b);
	pony_layout_stats(l, &st);
	if (!r && st.regets) {
		fprintf(stderr, "%s: the layout was got again %llu times after its clone went\n",
			argv[1], (unsigned long long)st.regets);
		r = 1;
	}
	pony_layout_return(l);
	free(a);
	free(b);
	close(fd);
	return r;
}
