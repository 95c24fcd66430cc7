/*
 * layout_lease_check.c - a layout lease held across shell commands, for
 * layout_lease.sh: the raw ioctls (PONYFUSE_IOC_LAYOUT with a lease,
 * PONYFUSE_IOC_LAYOUT_MEMBER, PONYFUSE_IOC_LAYOUT_LEASE), so the lease
 * outlives this process (it is the mount's, not a descriptor's) and the
 * script can change the file through the mount in between. The blocks a
 * layout names are read straight from the member devices, as a direct
 * client reads them.
 *
 *   layout_lease_check get FILE STATE
 *	a leased layout of all of FILE; reads every DATA piece from its
 *	member; those bytes must be FILE's as read through the mount. STATE
 *	gets the lease and the pieces, STATE.bytes their bytes. Prints
 *	"lease ID ms MS blocks N".
 *   layout_lease_check hold FILE STATE
 *	the same lease, its pieces neither read nor kept (members that are
 *	not files here: NBD URIs).
 *   layout_lease_check status ANY STATE    "held", "recalled" or "expired"
 *   layout_lease_check return ANY STATE    returns the lease; its state before
 *   layout_lease_check same ANY STATE
 *	exit 0 when every block the pieces name still holds the bytes it
 *	held at get, else 1 with "N of M blocks changed".
 *
 * ANY is any regular file of the same mount (FILE may be gone by then).
 * Exit 2: a call failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "pony/fuse.h"

#define BLK 4096u
#define MAX_PIECES 4096u

struct piece {
	char device[256];
	uint64_t member_offset, file_offset, length;
};

static struct piece pieces[MAX_PIECES];
static unsigned npieces;

static int die(const char *what, int err)
{
	fprintf(stderr, "%s: %s\n", what, strerror(err));
	exit(2);
}

static void member_device(int fd, uint32_t index, char device[256])
{
	struct ponyfuse_layout_member_arg m = { .version = PONYFUSE_LAYOUT_VERSION, .index = index };

	if (ioctl(fd, PONYFUSE_IOC_LAYOUT_MEMBER, &m) < 0)
		die("PONYFUSE_IOC_LAYOUT_MEMBER", errno);
	if (!m.device[0])
		die("a member of the layout is missing", ENODEV);
	memcpy(device, m.device, 256);
}

/* Pages through FILE's layout on one lease; keeps its DATA pieces when keep. */
static uint32_t get_layout(int fd, bool keep, uint32_t *ret_ms)
{
	static struct ponyfuse_layout_arg a;
	uint32_t lease = PONYFUSE_LEASE_NEW;
	uint64_t off = 0;

	do {
		a = (struct ponyfuse_layout_arg){ .version = PONYFUSE_LAYOUT_VERSION, .offset = off,
						  .length = UINT64_MAX - off, .lease = lease };
		if (ioctl(fd, PONYFUSE_IOC_LAYOUT, &a) < 0)
			die("PONYFUSE_IOC_LAYOUT", errno);
		if (!a.lease || a.lease == PONYFUSE_LEASE_NEW || !a.lease_ms)
			die("no lease granted", EPROTO);
		if (lease == PONYFUSE_LEASE_NEW)
			*ret_ms = a.lease_ms;
		lease = a.lease;
		for (uint32_t i = 0; i < a.npieces; i++) {
			const struct ponyfuse_layout_piece *p = &a.pieces[i];

			if (p->role != PONYFUSE_PIECE_DATA || !keep)
				continue;
			if (npieces == MAX_PIECES)
				die("too many pieces", E2BIG);
			member_device(fd, p->member, pieces[npieces].device);
			pieces[npieces].member_offset = p->member_offset;
			pieces[npieces].file_offset = p->file_offset;
			pieces[npieces++].length = p->length;
		}
		off = a.next;
	} while (!(a.flags & PONYFUSE_LAYOUT_COMPLETE));
	return lease;
}

static void piece_read(const struct piece *p, uint8_t *buf)
{
	int fd = open(p->device, O_RDONLY);

	if (fd < 0 || pread(fd, buf, p->length, (off_t)p->member_offset) != (ssize_t)p->length)
		die(p->device, fd < 0 ? errno : EIO);
	close(fd);
}

static uint64_t pieces_bytes(void)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < npieces; i++)
		n += pieces[i].length;
	return n;
}

static int cmd_get(const char *file, const char *state, bool keep)
{
	char path[4200];
	uint32_t lease, ms = 0;
	uint8_t *bytes, *mnt;
	uint64_t total, at = 0, size;
	int fd = open(file, O_RDONLY);
	FILE *st, *sb;

	if (fd < 0)
		die(file, errno);
	lease = get_layout(fd, keep, &ms);
	total = pieces_bytes();
	size = (uint64_t)lseek(fd, 0, SEEK_END);
	bytes = malloc(total + 1);
	mnt = malloc(total + 1);
	if (!bytes || !mnt)
		die("malloc", ENOMEM);
	for (unsigned i = 0; i < npieces; i++) {
		const struct piece *p = &pieces[i];
		uint64_t want = p->file_offset >= size ? 0 :
				size - p->file_offset < p->length ? size - p->file_offset : p->length;

		piece_read(p, bytes + at);
		/* The blocks named are the file's bytes now: the layout is right to begin with. */
		if (pread(fd, mnt, want, (off_t)p->file_offset) != (ssize_t)want ||
		    memcmp(mnt, bytes + at, want))
			die("a piece does not hold the file's bytes", EBADMSG);
		at += p->length;
	}
	snprintf(path, sizeof(path), "%s.bytes", state);
	st = fopen(state, "w");
	sb = fopen(path, "w");
	if (!st || !sb || fwrite(bytes, 1, total, sb) != total)
		die(state, errno);
	fprintf(st, "%" PRIu32 "\n", lease);
	for (unsigned i = 0; i < npieces; i++)
		fprintf(st, "%s %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", pieces[i].device,
			pieces[i].member_offset, pieces[i].file_offset, pieces[i].length);
	fclose(st);
	fclose(sb);
	printf("lease %" PRIu32 " ms %" PRIu32 " blocks %" PRIu64 "\n", lease, ms, total / BLK);
	free(bytes);
	free(mnt);
	close(fd);
	return 0;
}

static uint32_t state_load(const char *state)
{
	FILE *st = fopen(state, "r");
	uint32_t lease;

	if (!st || fscanf(st, "%" SCNu32, &lease) != 1)
		die(state, st ? EINVAL : errno);
	while (npieces < MAX_PIECES &&
	       fscanf(st, "%255s %" SCNu64 " %" SCNu64 " %" SCNu64, pieces[npieces].device,
		      &pieces[npieces].member_offset, &pieces[npieces].file_offset,
		      &pieces[npieces].length) == 4)
		npieces++;
	fclose(st);
	return lease;
}

static int cmd_lease(const char *any, const char *state, uint32_t op)
{
	static const char *const names[] = { "held", "recalled", "expired" };
	struct ponyfuse_layout_lease_arg a = { .version = PONYFUSE_LAYOUT_VERSION,
					       .lease = state_load(state), .op = op };
	int fd = open(any, O_RDONLY);

	if (fd < 0 || ioctl(fd, PONYFUSE_IOC_LAYOUT_LEASE, &a) < 0)
		die("PONYFUSE_IOC_LAYOUT_LEASE", errno);
	printf("%s\n", a.state < 3 ? names[a.state] : "?");
	close(fd);
	return 0;
}

static int cmd_same(const char *state)
{
	char path[4200];
	uint64_t total, at = 0, changed = 0;
	uint8_t *old, *now;
	FILE *sb;

	state_load(state);
	total = pieces_bytes();
	old = malloc(total + 1);
	now = malloc(total + 1);
	snprintf(path, sizeof(path), "%s.bytes", state);
	sb = fopen(path, "r");
	if (!old || !now || !sb || fread(old, 1, total, sb) != total)
		die(path, errno);
	fclose(sb);
	for (unsigned i = 0; i < npieces; i++) {
		piece_read(&pieces[i], now + at);
		at += pieces[i].length;
	}
	for (uint64_t b = 0; b < total / BLK; b++)
		changed += memcmp(old + b * BLK, now + b * BLK, BLK) != 0;
	printf("%" PRIu64 " of %" PRIu64 " blocks changed\n", changed, total / BLK);
	free(old);
	free(now);
	return changed ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "get"))
		return cmd_get(argv[2], argv[3], true);
	if (argc == 4 && !strcmp(argv[1], "hold"))
		return cmd_get(argv[2], argv[3], false);
	if (argc == 4 && !strcmp(argv[1], "status"))
		return cmd_lease(argv[2], argv[3], PONYFUSE_LEASE_STATUS);
	if (argc == 4 && !strcmp(argv[1], "return"))
		return cmd_lease(argv[2], argv[3], PONYFUSE_LEASE_RETURN);
	if (argc == 4 && !strcmp(argv[1], "same"))
		return cmd_same(argv[3]);
	fprintf(stderr, "usage: layout_lease_check get|hold|status|return|same FILE STATE\n");
	return 2;
}
