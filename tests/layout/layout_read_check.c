/*
 * layout_read_check.c - FILE's bytes through libpony-layout.so (linked as
 * a program outside pony would link it, through include/pony/layout.h
 * alone) against the same bytes through the mount: the whole file in one
 * read, then many reads at random offsets and lengths (unaligned, across
 * extents and pieces, past the end), every other one by a clone of the
 * layout (pony_layout_clone, as parallel readers use); the clone given back
 * first, the layout reads on under its lease, never got again (a clone
 * that returned the lease it borrowed would make the next read get it
 * again); then the file a window at a time, each window's layout got by
 * moving one layout and its clone on (pony_layout_seek). With MEMBER AWAY,
 * the member image MEMBER is moved to AWAY while the clone is made (and
 * back): the clone must read every member still, none rebuilt (it opens
 * the files its origin checked, not their names again). Exits 0 when
 * every read matched, 1 with the first difference on stderr. Usage: layout_read_check FILE [SEED [MEMBER AWAY]].
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

/* The regets of l (a layout got again), on stderr as a failure when any. */
static int no_regets(struct pony_layout *l, const char *what)
{
	struct pony_layout_stats st;

	pony_layout_stats(l, &st);
	if (st.regets)
		fprintf(stderr, "%s: the layout was got again %llu times\n", what,
			(unsigned long long)st.regets);
	return st.regets != 0;
}

/*
 * The file a window at a time, as `pony fs cat --direct` reads it: a layout
 * of the first window (an odd length: windows start inside blocks), moved
 * on to each next one (pony_layout_seek), by it and a clone of it in
 * turns, each window checked against the mount, to past the end, then
 * back to the first; a read past a window is refused (the layout holds
 * that window alone), and no move gets the layout again (each joins the
 * one lease, which the clone, given back first, does not return).
 */
static int check_windows(int fd, uint64_t size, uint8_t *a, uint8_t *b)
{
	const uint64_t win = 300001;
	uint64_t last = 0;              /* l's window when the loop ends */
	struct pony_layout *l, *c;
	int r = pony_layout_get(fd, 0, win, &l);

	if (r < 0 || (r = pony_layout_clone(l, &c)) < 0) {
		fprintf(stderr, "a window's layout: %s\n", strerror(-r));
		return 1;
	}
	for (uint64_t off = 0, k = 0; !r && off < size + win; off += win, k++) {
		struct pony_layout *rd = k % 2 ? c : l;
		ssize_t past;

		if (rd == l)
			last = off;

		r = pony_layout_seek(rd, off, win);
		if (r < 0) {
			fprintf(stderr, "seek to %llu: %s\n", (unsigned long long)off, strerror(-r));
			r = 1;
			break;
		}
		r = check(rd, fd, off, win, a, b);
		past = off + win < size ? pony_layout_read(rd, a, off + win, 1) : -EINVAL;
		if (!r && past != -EINVAL) {
			fprintf(stderr, "a read past the window at %llu: %zd, not -EINVAL\n",
				(unsigned long long)off, past);
			r = 1;
		}
	}
	r = r || no_regets(c, "the clone moved window by window");
	pony_layout_return(c);
	/* Its window read again (the lease still held: no reget), then back to the first. */
	r = r || check(l, fd, last, win, a, b) || pony_layout_seek(l, 0, win) < 0 ||
	    check(l, fd, 0, win, a, b) || no_regets(l, "the layout moved window by window");
	pony_layout_return(l);
	return r;
}

int main(int argc, char **argv)
{
	struct pony_layout *l, *clone;
	uint64_t size;
	uint8_t *a, *b;
	int fd, r;

	if (argc < 2 || argc == 4 || argc > 5) {
		fprintf(stderr, "usage: layout_read_check FILE [SEED [MEMBER AWAY]]\n");
		return 2;
	}
	srandom(argc > 2 ? (unsigned)atoi(argv[2]) : 1);
	fd = open(argv[1], O_RDONLY);
	if (fd < 0 || (r = pony_layout_get(fd, 0, UINT64_MAX, &l)) < 0) {
		fprintf(stderr, "%s: %s\n", argv[1], strerror(fd < 0 ? errno : -r));
		return 1;
	}
	/* MEMBER's path moved AWAY between the layout and its clone: the
	 * clone reads the member the layout opened, not the name. */
	if (argc == 5 && rename(argv[3], argv[4]) < 0) {
		fprintf(stderr, "%s: %s\n", argv[3], strerror(errno));
		return 1;
	}
	r = pony_layout_clone(l, &clone);
	if (argc == 5 && rename(argv[4], argv[3]) < 0) {
		fprintf(stderr, "%s: %s\n", argv[4], strerror(errno));
		return 1;
	}
	if (r < 0) {
		fprintf(stderr, "%s: clone: %s\n", argv[1], strerror(-r));
		return 1;
	}
	size = pony_layout_size(l);
	a = malloc(size + 8192);
	b = malloc(size + 8192);
	r = !a || !b || check(clone, fd, 0, size + 8192, a, b) || check(l, fd, 0, size + 8192, a, b);
	if (!r && argc == 5) {
		struct pony_layout_stats st;

		pony_layout_stats(clone, &st);
		if (st.rebuilt || st.members_refused) {
			fprintf(stderr, "the clone rebuilt %llu blocks, refused %llu members: it "
				"opened %s by name\n", (unsigned long long)st.rebuilt,
				(unsigned long long)st.members_refused, argv[3]);
			r = 1;
		}
	}
	for (int i = 0; i < 300 && !r; i++) {
		uint64_t off = (uint64_t)random() % (size + 100);
		size_t len = (size_t)random() % (i % 3 ? 9000 : 300000) + 1;

		r = check(i % 2 ? clone : l, fd, off, len, a, b);
	}
	pony_layout_return(clone);
	r = r || check(l, fd, 0, size + 8192, a, b);
	r = r || no_regets(l, "after its clone went");
	pony_layout_return(l);
	r = r || check_windows(fd, size, a, b);
	free(a);
	free(b);
	close(fd);
	return r;
}
