/*
 * layout_remote_read.c - a direct reader on another host, through
 * libpony-layout.so's pony_layout_get_remote() alone: gets PATH's layout
 * from the layout service at ADDR, tells the test it holds it (creates
 * READY), waits for the test's GO (the file changed on the mount's host
 * meanwhile and the lease ran out), then reads the whole file and compares
 * it with REF. Prints "regets N member_bytes M rebuilt R"; exits 0 when
 * every byte matched, 1 otherwise (the difference on stderr).
 * Usage: layout_remote_read ADDR PSK|- PATH REF READY GO
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pony/layout.h"

static int wait_for(const char *path)
{
	for (int i = 0; i < 1200; i++) {
		if (access(path, F_OK) == 0)
			return 0;
		usleep(50000);
	}
	return -1;
}

static int compare(struct pony_layout *l, FILE *ref)
{
	static uint8_t a[1 << 20], b[1 << 20];
	uint64_t off = 0;

	for (;;) {
		ssize_t got = pony_layout_read(l, a, off, sizeof(a));
		size_t want = fread(b, 1, sizeof(b), ref);

		if (got < 0) {
			fprintf(stderr, "read at %llu: %s\n", (unsigned long long)off,
				strerror((int)-got));
			return 1;
		}
		if ((size_t)got != want || memcmp(a, b, want)) {
			fprintf(stderr, "at %llu: %zd bytes read directly differ from the %zu of the "
				"reference\n", (unsigned long long)off, got, want);
			return 1;
		}
		if (!got)
			return 0;
		off += (uint64_t)got;
	}
}

int main(int argc, char **argv)
{
	struct pony_layout_server s = { 0 };
	struct pony_layout_stats st;
	struct pony_layout *l;
	FILE *ref;
	int r;

	if (argc != 7) {
		fprintf(stderr, "usage: layout_remote_read ADDR PSK|- PATH REF READY GO\n");
		return 2;
	}
	s.addr = argv[1];
	s.psk_file = strcmp(argv[2], "-") ? argv[2] : NULL;
	r = pony_layout_get_remote(&s, argv[3], 0, UINT64_MAX, &l);
	if (r < 0) {
		fprintf(stderr, "layout of %s from %s: %s\n", argv[3], argv[1], strerror(-r));
		return 1;
	}
	close(open(argv[5], O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
	if (wait_for(argv[6]) < 0) {
		fprintf(stderr, "no %s\n", argv[6]);
		pony_layout_return(l);
		return 1;
	}
	ref = fopen(argv[4], "rb");
	r = ref ? compare(l, ref) : 1;
	if (ref)
		fclose(ref);
	pony_layout_stats(l, &st);
	printf("regets %llu member_bytes %llu rebuilt %llu\n", (unsigned long long)st.regets,
	       (unsigned long long)st.member_bytes, (unsigned long long)st.rebuilt);
	pony_layout_return(l);
	return r;
}
