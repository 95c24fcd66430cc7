/*
 * layout_socket_client.c - a client of the layout service for the
 * layoutd tests, one request shape per command, through the client end
 * (src/layoutd/client.c). TARGET is unix:PATH, or tcp:HOST:PORT with
 * PONY_LAYOUT_PSK naming a PSK file (unset: in the clear). FILE is a path
 * on the mount for unix: (passed as a descriptor), from the mount's root
 * for tcp: (GET_PATH).
 *   hold TARGET FILE READY SECONDS  a leased layout; touches READY; waits for
 *                                   the recall; STATUS; RETURN; STATUS
 *   keep TARGET FILE READY          a leased layout, then waits to be killed
 *   status TARGET LEASE             the lease's state
 *   layout TARGET FILE              a layout without a lease: "extents N size S"
 *   topology TARGET                 "level L members N" and each member's device
 *   nofd TARGET                     a GET without a descriptor
 *   foreign TARGET FILE             a GET of a file of another filesystem
 * It prints one line per answer ("lease 3 extents 2", "recalled 3",
 * "state held", "error 9") for the script to compare.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pony/layoutd.h"

static uint8_t msg[LAYOUTD_MAX_PAYLOAD];
static bool over_tcp;

static struct layoutd_client *dial(const char *target)
{
	struct layoutd_client *c = NULL;
	int r;

	over_tcp = !strncmp(target, "tcp:", 4);
	if (over_tcp)
		r = layoutd_client_tcp(target + 4, getenv("PONY_LAYOUT_PSK"), &c);
	else if (!strncmp(target, "unix:", 5))
		r = layoutd_client_unix(target + 5, &c);
	else
		r = -EINVAL;
	if (r < 0) {
		printf("connect %s\n", strerror(-r));
		exit(3);
	}
	return c;
}

static void request(struct layoutd_client *c, enum layoutd_type type, const void *payload,
		    size_t len, int file_fd)
{
	int r = layoutd_client_send(c, type, 7, payload, len, file_fd);

	if (r < 0) {
		printf("send %s\n", strerror(-r));
		exit(2);
	}
}

/* The next message, its type; -1 on a closed connection or timeout (ms). */
static int answer(struct layoutd_client *c, int timeout_ms, size_t *ret_len)
{
	struct layoutd_hdr h;
	int r = layoutd_client_recv(c, timeout_ms, &h, msg, sizeof(msg), ret_len);

	if (r == -EPROTO) {
		printf("bad header\n");
		exit(1);
	}
	return r < 0 ? -1 : le16_to_cpu(h.type);
}

static uint32_t payload32(size_t off)
{
	le32 v;

	memcpy(&v, msg + off, sizeof(v));
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

/* A layout of all of file, with a new lease when leased: prints it, returns the lease. */
static uint32_t get_layout(struct layoutd_client *c, const char *file, bool leased)
{
	static struct vfs_layout_extent ext[LAYOUTD_MAX_EXTENTS];
	static uint32_t csums[LAYOUTD_MAX_CSUMS];
	static struct vfs_layout_piece pieces[LAYOUTD_MAX_PIECES];
	static uint8_t req[LAYOUTD_MAX_REQUEST];
	struct vfs_layout l = { .extents = ext, .max_extents = LAYOUTD_MAX_EXTENTS,
				.csums = csums, .max_csums = LAYOUTD_MAX_CSUMS,
				.pieces = pieces, .max_pieces = LAYOUTD_MAX_PIECES };
	struct layoutd_get g = { .length = cpu_to_le64(UINT64_MAX),
				 .lease = cpu_to_le32(leased ? VFS_LEASE_NEW : 0) };
	size_t len;
	int type;

	if (over_tcp) {
		struct layoutd_get_path gp = { .get = g, .path_len = cpu_to_le32(strlen(file)) };

		memcpy(req, &gp, sizeof(gp));
		memcpy(req + sizeof(gp), file, strlen(file));
		request(c, LAYOUTD_GET_PATH, req, sizeof(gp) + strlen(file), -1);
	} else {
		int fd = open(file, O_RDONLY | O_CLOEXEC);

		if (fd < 0) {
			perror(file);
			exit(2);
		}
		request(c, LAYOUTD_GET, &g, sizeof(g), fd);
		close(fd);
	}
	type = answer(c, 10000, &len);
	if (print_error(type))
		exit(1);
	if (type != LAYOUTD_LAYOUT || layoutd_layout_decode(msg, len, &l) < 0) {
		printf("no layout (type %d)\n", type);
		exit(1);
	}
	if (leased)
		printf("lease %u extents %u size %llu\n", l.lease, l.nextents,
		       (unsigned long long)l.size);
	else
		printf("extents %u size %llu\n", l.nextents, (unsigned long long)l.size);
	fflush(stdout);
	return l.lease;
}

static const char *state_name(uint32_t s)
{
	return s == VFS_LEASE_HELD ? "held" : s == VFS_LEASE_RECALLED ? "recalled" :
	       s == VFS_LEASE_EXPIRED ? "expired" : "?";
}

static void lease_op(struct layoutd_client *c, uint32_t lease, uint32_t op)
{
	struct layoutd_lease q = { .lease = cpu_to_le32(lease), .op = cpu_to_le32(op) };
	size_t len;
	int type;

	request(c, LAYOUTD_LEASE, &q, sizeof(q), -1);
	/* A recall pushed meanwhile may come first. */
	while ((type = answer(c, 10000, &len)) == LAYOUTD_RECALL)
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

static int topology(struct layoutd_client *c)
{
	struct layoutd_topology_head head;
	size_t len;
	int type;

	request(c, LAYOUTD_TOPOLOGY, NULL, 0, -1);
	type = answer(c, 10000, &len);
	if (print_error(type))
		return 0;
	if (type != LAYOUTD_TOPOLOGY_IS || len < sizeof(head))
		return 1;
	memcpy(&head, msg, sizeof(head));
	if (len != sizeof(head) + le32_to_cpu(head.nmembers) * sizeof(struct layoutd_member))
		return 1;
	printf("level %.16s members %u\n", head.level, le32_to_cpu(head.nmembers));
	for (uint32_t i = 0; i < le32_to_cpu(head.nmembers); i++) {
		struct layoutd_member m;

		memcpy(&m, msg + sizeof(head) + i * sizeof(m), sizeof(m));
		printf("member %u %.256s\n", i, m.device);
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 2 ? argv[1] : "";
	struct layoutd_client *c = argc > 2 ? dial(argv[2]) : NULL;
	size_t len;
	int type;

	if (!strcmp(cmd, "hold") && argc == 6) {
		uint32_t lease = get_layout(c, argv[3], true);

		touch(argv[4]);
		type = answer(c, atoi(argv[5]) * 1000, &len);
		if (type != LAYOUTD_RECALL) {
			printf("no recall (%d)\n", type);
			return 1;
		}
		printf("recalled %u\n", payload32(0));
		lease_op(c, lease, VFS_LEASE_STATUS);
		lease_op(c, lease, VFS_LEASE_RETURN);
		lease_op(c, lease, VFS_LEASE_STATUS);
		layoutd_client_close(c);
		return 0;
	}
	if (!strcmp(cmd, "keep") && argc == 5) {
		get_layout(c, argv[3], true);
		touch(argv[4]);
		for (;;)
			pause();
	}
	if (!strcmp(cmd, "status") && argc == 4) {
		lease_op(c, (uint32_t)strtoul(argv[3], NULL, 10), VFS_LEASE_STATUS);
		layoutd_client_close(c);
		return 0;
	}
	if (!strcmp(cmd, "layout") && argc == 4) {
		get_layout(c, argv[3], false);
		layoutd_client_close(c);
		return 0;
	}
	if (!strcmp(cmd, "topology") && argc == 3) {
		int r = topology(c);

		layoutd_client_close(c);
		return r;
	}
	if (!strcmp(cmd, "nofd") && argc == 3) {
		struct layoutd_get g = { .length = cpu_to_le64(4096) };

		request(c, LAYOUTD_GET, &g, sizeof(g), -1);
		type = print_error(answer(c, 10000, &len)) ? 0 : 1;
		layoutd_client_close(c);
		return type;
	}
	if (!strcmp(cmd, "foreign") && argc == 4) {
		struct layoutd_get g = { .length = cpu_to_le64(4096) };
		int fd = open(argv[3], O_RDONLY | O_CLOEXEC);

		request(c, LAYOUTD_GET, &g, sizeof(g), fd);
		if (fd >= 0)
			close(fd);
		type = print_error(answer(c, 10000, &len)) ? 0 : 1;
		layoutd_client_close(c);
		return type;
	}
	fprintf(stderr, "usage: layout_socket_client hold|keep|status|layout|topology|nofd|"
			"foreign TARGET ...\n");
	return 2;
}
