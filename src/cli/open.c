/*
 * open.c - how every pony command opens the devices it is given by name:
 * image files and block devices through one acall ring, NBD URIs through
 * libnbd (bdev_open() decides), with the member timeout that
 * `--member-timeout SECONDS` sets for the whole command line. Kept in one
 * place so `pony vol ...`, `pony mkfs` and `pony mount` accept the same
 * names and say the same thing when one cannot be opened. devdb's probers
 * read such a device here too (a URI has no path to probe).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "pony/acall.h"
#include "pony/bdev.h"
#include "pony/devdb.h"
#include "pony/util.h"

static unsigned member_timeout_ms;      /* 0: the backend's default (30 s) */

/*
 * One acall ring for every member this process opens: member I/O goes
 * through io_uring (or acall's workers). It lives until the process exits,
 * as the bdevs using it do.
 */
static struct acall_ring *cli_ring(void)
{
	static struct acall_ring *ring;
	static bool tried;

	if (!tried) {
		tried = true;
		if (acall_ring_new(NULL, &ring) < 0)
			ring = NULL;    /* plain syscalls then */
	}
	return ring;
}

unsigned cli_member_timeout_ms(void)
{
	return member_timeout_ms;
}

int cli_open_device(const char *name, int oflags, bool ring, struct bdev **ret)
{
	char why[512] = "";
	struct bdev_open_params p = {
		.flags = oflags, .ring = ring ? cli_ring() : NULL,
		.timeout_ms = member_timeout_ms, .why = why, .why_size = sizeof(why),
	};
	int r = bdev_open(name, &p, ret);

	if (r < 0)
		cli_error("%s: %s", name, why[0] ? why : strerror(-r));
	return r;
}

int cli_open_members(char *const *names, int n, int oflags, bool ring, bool degraded,
		     struct bdev **devs, char **used, int *ret_n)
{
	int k = 0;

	for (int i = 0; i < n; i++) {
		if (cli_open_device(names[i], oflags, ring, &devs[k]) == 0) {
			used[k++] = names[i];
			continue;
		}
		if (degraded && bdev_name_is_nbd(names[i])) {
			fprintf(stderr, "pony: %s left out: the volume starts without it\n", names[i]);
			continue;
		}
		while (k--)
			bdev_free(devs[k]);
		return CLI_EXIT_FAILURE;
	}
	*ret_n = k;
	return 0;
}

static int64_t bdev_reader_read(void *ctx, void *buf, size_t len, uint64_t off)
{
	int r = bdev_pread(ctx, buf, len, off);

	return r < 0 ? r : (int64_t)len;
}

int cli_probe_device(const char *name, struct devdb_probe_result **ret, uint64_t *ret_size)
{
	_cleanup_(bdev_freep) struct bdev *b = NULL;
	struct devdb_reader rd = { .read = bdev_reader_read };
	int r = cli_open_device(name, O_RDONLY, false, &b);

	if (r < 0)
		return r;
	rd.size = bdev_size(b);
	rd.ctx = b;
	if (ret_size)
		*ret_size = rd.size;
	return ret ? devdb_probe_reader(&rd, NULL, ret) : 0;
}

/* The part of an NBD URI that names the export (a TCP URI's query is TLS settings). */
static size_t nbd_key_len(const char *uri)
{
	return strstr(uri, "+unix://") ? strlen(uri) : strcspn(uri, "?");
}

bool cli_same_device(const char *a, const char *b)
{
	struct stat sa, sb;

	if (bdev_name_is_nbd(a) || bdev_name_is_nbd(b))
		return bdev_name_is_nbd(a) && bdev_name_is_nbd(b) && nbd_key_len(a) == nbd_key_len(b) &&
		       !strncmp(a, b, nbd_key_len(a));
	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

int cli_take_member_timeout(int *argc, char **argv)
{
	for (int i = 1; i < *argc; i++) {
		const char *val = NULL;
		int used = 0;
		double s;
		int r;

		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "--member-timeout")) {
			if (i + 1 >= *argc)
				return cli_usage_error("pony", "--member-timeout needs a number of seconds");
			val = argv[i + 1];
			used = 2;
		} else if (!strncmp(argv[i], "--member-timeout=", 17)) {
			val = argv[i] + 17;
			used = 1;
		} else {
			continue;
		}
		r = cli_parse_seconds("pony", "--member-timeout", val, 0.001, 86400, &s);
		if (r)
			return r;
		member_timeout_ms = (unsigned)(s * 1000 + 0.5);
		memmove(&argv[i], &argv[i + used], (size_t)(*argc - i - used + 1) * sizeof(*argv));
		*argc -= used;
		i--;
	}
	return 0;
}
