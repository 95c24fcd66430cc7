/*
 * layout_socket_client.c - a client of the layout control socket for
 * layout_socket.sh, one request shape per command, speaking the wire
 * format through include/pony/layoutd.h's own encoders:
 *   hold SOCKET FILE READY SECONDS  a leased layout of FILE; touches READY;
 *                                   waits for the recall; STATUS; RETURN
 *   keep SOCKET FILE READY          a leased layout, then waits to be killed
 *   status SOCKET LEASE             the lease's state
 *   nofd SOCKET                     a GET without a descriptor
 *   foreign SOCKET FILE             a GET of a file of another filesystem
 *   garbage SOCKET                  a header with a wrong magic
 * It prints one line per answer ("lease 3 extents 2", "recalled 3",
 * "state held", "error 9") for the script to compare.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "pony/layoutd.h"

static uint8_t msg[sizeof(struct layoutd_hdr) + LAYOUTD_MAX_PAYLOAD];

static int dial(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		fprintf(stderr, "connect %s: %s\n", path, strerror(errno));
		exit(2);
	}
	return fd;
}

/* Sends a request, with file_fd attached unless it is -1. */
static void request(int sock, enum layoutd_type type, uint32_t tag, const void *payload,
		    size_t len, int file_fd)
{
	struct layoutd_hdr h = layoutd_hdr_make(type, (uint32_t)len, tag);
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { msg, sizeof(h) + len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	memcpy(msg, &h, sizeof(h));
	memcpy(msg + sizeof(h), payload, len);
	if (file_fd >= 0) {
		struct cmsghdr *cm;

		mh.msg_control = ctl.buf;
		mh.msg_controllen = sizeof(ctl.buf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &file_fd, sizeof(int));
	}
	if (sendmsg(sock, &mh, MSG_NOSIGNAL) < 0) {
		perror("sendmsg");
		exit(2);
	}
}

/* The next message, its type; -1 on a closed socket or timeout (ms). */
static int answer(int sock, int timeout_ms, size_t *ret_len)
{
	struct pollfd p = { .fd = sock, .events = POLLIN };
	struct layoutd_hdr h;
	ssize_t n;

	if (poll(&p, 1, timeout_ms) != 1)
		return -1;
	n = recv(sock, msg, sizeof(msg), 0);
	if (n < (ssize_t)sizeof(h))
		return -1;
	memcpy(&h, msg, sizeof(h));
	*ret_len = (size_t)n - sizeof(h);
	if (layoutd_hdr_check(&h, *ret_len) < 0) {
		printf("bad header\n");
		exit(1);
	}
	return le16_to_cpu(h.type);
}

static uint32_t payload32(size_t off)
{
	le32 v;

	memcpy(&v, msg + sizeof(struct layoutd_hdr) + off, sizeof(v));
	return le32_to_cpu(v);
}

/* Prints an ERROR answer's errno; false when the answer is something else. */
static bool print_error(int type)
{
	if (type != LAYOUTD_ERROR)
		return false;
	printf("error %u\n", payload32(0));
	return true;
}

static uint32_t get_leased(int sock, const char *file)
{
	static struct vfs_layout_extent ext[LAYOUTD_MAX_EXTENTS];
	static uint32_t csums[LAYOUTD_MAX_CSUMS];
	static struct vfs_layout_piece pieces[LAYOUTD_MAX_PIECES];
	struct vfs_layout l = { .extents = ext, .max_extents = LAYOUTD_MAX_EXTENTS,
				.csums = csums, .max_csums = LAYOUTD_MAX_CSUMS,
				.pieces = pieces, .max_pieces = LAYOUTD_MAX_PIECES };
	struct layoutd_get g = { .length = cpu_to_le64(UINT64_MAX),
				 .lease = cpu_to_le32(VFS_LEASE_NEW) };
	int fd = open(file, O_RDONLY | O_CLOEXEC), type;
	size_t len;

	if (fd < 0) {
		perror(file);
		exit(2);
	}
	request(sock, LAYOUTD_GET, 7, &g, sizeof(g), fd);
	close(fd);
	type = answer(sock, 10000, &len);
	if (print_error(type))
		exit(1);
	if (type != LAYOUTD_LAYOUT ||
	    layoutd_layout_decode(msg + sizeof(struct layoutd_hdr), len, &l) < 0) {
		printf("no layout (type %d)\n", type);
		exit(1);
	}
	printf("lease %u extents %u size %llu\n", l.lease, l.nextents,
	       (unsigned long long)l.size);
	fflush(stdout);
	return l.lease;
}

static const char *state_name(uint32_t s)
{
	return s == VFS_LEASE_HELD ? "held" : s == VFS_LEASE_RECALLED ? "recalled" :
	       s == VFS_LEASE_EXPIRED ? "expired" : "?";
}

static void lease_op(int sock, uint32_t lease, uint32_t op)
{
	struct layoutd_lease q = { .lease = cpu_to_le32(lease), .op = cpu_to_le32(op) };
	size_t len;
	int type;

	request(sock, LAYOUTD_LEASE, 9, &q, sizeof(q), -1);
	/* A recall pushed meanwhile may come first. */
	while ((type = answer(sock, 10000, &len)) == LAYOUTD_RECALL)
		;
	if (print_error(type))
		return;
	printf("%s %s\n", op == VFS_LEASE_RETURN ? "returned" : "state",
	       type == LAYOUTD_LEASE_STATE ? state_name(payload32(0)) : "no answer");
}

static void touch(const char *path)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);

	if (fd >= 0)
		close(fd);
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 2 ? argv[1] : "";
	int sock = argc > 2 ? dial(argv[2]) : -1;
	size_t len;
	int type;

	if (!strcmp(cmd, "hold") && argc == 6) {
		uint32_t lease = get_leased(sock, argv[3]);

		touch(argv[4]);
		type = answer(sock, atoi(argv[5]) * 1000, &len);
		if (type != LAYOUTD_RECALL) {
			printf("no recall (%d)\n", type);
			return 1;
		}
		printf("recalled %u\n", payload32(0));
		lease_op(sock, lease, VFS_LEASE_STATUS);
		lease_op(sock, lease, VFS_LEASE_RETURN);
		lease_op(sock, lease, VFS_LEASE_STATUS);
		return 0;
	}
	if (!strcmp(cmd, "keep") && argc == 5) {
		get_leased(sock, argv[3]);
		touch(argv[4]);
		for (;;)
			pause();
	}
	if (!strcmp(cmd, "status") && argc == 4) {
		lease_op(sock, (uint32_t)strtoul(argv[3], NULL, 10), VFS_LEASE_STATUS);
		return 0;
	}
	if (!strcmp(cmd, "nofd") && argc == 3) {
		struct layoutd_get g = { .length = cpu_to_le64(4096) };

		request(sock, LAYOUTD_GET, 1, &g, sizeof(g), -1);
		return print_error(answer(sock, 10000, &len)) ? 0 : 1;
	}
	if (!strcmp(cmd, "foreign") && argc == 4) {
		struct layoutd_get g = { .length = cpu_to_le64(4096) };
		int fd = open(argv[3], O_RDONLY | O_CLOEXEC);

		request(sock, LAYOUTD_GET, 1, &g, sizeof(g), fd);
		return print_error(answer(sock, 10000, &len)) ? 0 : 1;
	}
	if (!strcmp(cmd, "garbage") && argc == 3) {
		struct layoutd_hdr h = layoutd_hdr_make(LAYOUTD_LEASE, 0, 1);

		h.magic = cpu_to_le32(0x12345678);
		if (send(sock, &h, sizeof(h), MSG_NOSIGNAL) < 0)
			return 2;
		if (!print_error(answer(sock, 10000, &len)))
			return 1;
		/* and the daemon hangs up */
		printf("%s\n", answer(sock, 10000, &len) < 0 ? "closed" : "still open");
		return 0;
	}
	fprintf(stderr, "usage: layout_socket_client hold|keep|status|nofd|foreign|garbage "
			"SOCKET ...\n");
	return 2;
}
