/*
 * cmd_fs_direct.c - `pony fs cat [--direct] FILE`: a file of a pony mount
 * to stdout, through the mount, or with --direct straight from the
 * volume's members through libpony-layout (include/pony/layout.h): the
 * command people use to check, and benchmarks time, that the direct
 * reader returns the same bytes as the mount. Direct: one reader per core,
 * each a clone of the first chunk's layout made on its own thread, taking
 * the next 16 MiB chunk when it is free, getting that chunk's layout, and
 * writing its chunks in order. With --server, from another host (one
 * reader: a remote layout has no clone): the layout from the mount's
 * layout service, the bytes from the members' NBD servers.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cli.h"
#include "pony/layout.h"
#include "pony/util.h"

#define CMD "pony fs cat"
#define CAT_CHUNK (16u << 20)           /* bytes a read asks for: many pieces in flight */

static int write_all(const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(STDOUT_FILENO, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return cli_error("writing to stdout: %s", strerror(errno));
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Through the mount, as cat(1) would. */
static int cat_mount(int fd, const char *path, void *buf)
{
	for (uint64_t off = 0;;) {
		ssize_t n = pread(fd, buf, CAT_CHUNK, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return cli_error("%s: read at %" PRIu64 ": %s", path, off, strerror(errno));
		if (!n)
			return 0;
		if (write_all(buf, (size_t)n))
			return CLI_EXIT_FAILURE;
		off += (uint64_t)n;
	}
}

static int read_error(const char *path, uint64_t off, int err)
{
	if (err == EIO)
		return cli_error("%s: a block at or after %" PRIu64 " is lost beyond the volume's "
				 "redundancy", path, off);
	if (err == ESTALE)
		return cli_error("%s: the file kept changing while it was read; try again", path);
	if (err == EAGAIN)
		return cli_error("%s: data at or after %" PRIu64 " is still cached in the mount's "
				 "daemon, not on the members: pony sync it on its host and try "
				 "again", path, off);
	return cli_error("%s: direct read at %" PRIu64 ": %s", path, off, strerror(err));
}

static void print_stats(const char *path, const struct pony_layout_stats *st)
{
	fprintf(stderr, "%s: %" PRIu64 " bytes from members, %" PRIu64 " through the mount, %"
		PRIu64 " zeros, %" PRIu64 " blocks rebuilt, %" PRIu64 " layouts got again\n", path,
		st->member_bytes, st->mount_bytes, st->zero_bytes, st->rebuilt, st->regets);
}

/* Members read around: their names led to devices that are not them. */
static void warn_refused(const char *path, const struct pony_layout_stats *st)
{
	if (st->members_refused)
		fprintf(stderr, "pony: %s: %" PRIu64 " member(s) not read: the device the name "
			"leads to carries another member's superblock; their blocks were rebuilt "
			"from the others\n", path, st->members_refused);
}

/* Why a layout service did not give a layout. */
static int remote_error(const struct pony_layout_server *s, const char *path, int err)
{
	switch (err) {
	case EACCES:
		return cli_error("%s: refused: %s (a wrong key, or the file is encrypted: keys "
				 "never leave the mount)", s->addr, path);
	case ENXIO:
		return cli_error("%s: the filesystem is on one image, not a pony volume: no "
				 "members to read from this host", path);
	case ECONNRESET:
		return cli_error("%s: the layout service closed the connection (it may need TLS: "
				 "--psk FILE)", s->addr);
	case ETIMEDOUT:
		return cli_error("%s: the layout service did not answer", s->addr);
	case ENOENT: case ENOTDIR: case EISDIR: case EOPNOTSUPP:
		return cli_layout_error(path, err);
	default:
		return cli_error("%s: %s: %s", s->addr, path, strerror(err));
	}
}

/*
 * Direct readers on as many threads as cores (at most CAT_READERS), each
 * with its own clone of one layout, moved to each chunk it takes (the
 * chunk's layout got then, under the one lease), and its own buffer. A reader takes the next chunk not taken, reads it, and writes it
 * when the chunk before it is out, so the output is in order while the
 * others read on; a reader the host's load holds back leaves the next
 * chunks to the others instead of holding up the chunks dealt to it. A
 * reader's time is mostly the kernel's copy from the members' page cache
 * and the CRC32C check: one thread leaves the other core idle.
 *
 * Every reader makes its clone on its own thread (each opens the members
 * again and sets up its ring), at once rather than one after the other
 * before any reads; one whose clone cannot be made takes no chunk. The
 * layout they are made of is read only when no clone could be made (a
 * layout from another host has none): reading it could get it again, and
 * so move its arrays, while a clone is being made of them.
 */
#define CAT_READERS 4

struct cat_readers {
	const char *path;
	struct pony_layout *origin;     /* the layout the clones are made of */
	pthread_mutex_t lock;
	pthread_cond_t turn_moved;
	uint64_t next;                  /* the first chunk no reader took */
	uint64_t turn;                  /* the chunk whose turn it is to go out */
	bool stop;                      /* the end, or an error, was written */
	int exit;                       /* CLI_EXIT_* of the first chunk that failed */
};

struct cat_reader {
	struct cat_readers *all;
	struct pony_layout *l;          /* its clone; NULL: not made (yet) */
	void *buf;
	pthread_t thread;
	bool started;
};

/* The next chunk to read, or false when the output ended. */
static bool chunk_take(struct cat_readers *all, uint64_t *k)
{
	bool go;

	pthread_mutex_lock(&all->lock);
	go = !all->stop;
	*k = all->next++;
	pthread_mutex_unlock(&all->lock);
	return go;
}

/* Waits for chunk k's turn: false when the output ended before it. */
static bool turn_wait(struct cat_readers *all, uint64_t k)
{
	bool go;

	pthread_mutex_lock(&all->lock);
	while (all->turn != k && !all->stop)
		pthread_cond_wait(&all->turn_moved, &all->lock);
	go = !all->stop;
	pthread_mutex_unlock(&all->lock);
	return go;
}

/* Chunk k is out (next: k + 1), or with stop the output ended (exit). */
static void turn_pass(struct cat_readers *all, uint64_t k, bool stop, int exit)
{
	pthread_mutex_lock(&all->lock);
	all->turn = k + 1;
	all->stop |= stop;
	if (exit && !all->exit)
		all->exit = exit;
	pthread_cond_broadcast(&all->turn_moved);
	pthread_mutex_unlock(&all->lock);
}

/* A reader's chunks: take, read, wait for the turn, write (or tell the error). */
static void *cat_reader_main(void *arg)
{
	struct cat_reader *rd = arg;
	struct cat_readers *all = rd->all;
	uint64_t k;

	if (!rd->l && pony_layout_clone(all->origin, &rd->l) < 0) {
		rd->l = NULL;
		return NULL;            /* the others read its share */
	}
	while (chunk_take(all, &k)) {
		uint64_t off = k * CAT_CHUNK;
		int r = pony_layout_seek(rd->l, off, CAT_CHUNK);
		ssize_t n = r < 0 ? r : pony_layout_read(rd->l, rd->buf, off, CAT_CHUNK);
		int exit = 0;

		if (!turn_wait(all, k))
			break;
		if (n < 0)
			exit = read_error(all->path, off, (int)-n);
		else if (n)
			exit = write_all(rd->buf, (size_t)n) ? CLI_EXIT_FAILURE : 0;
		/* A short chunk is the end of the file: the next reads nothing. */
		turn_pass(all, k, exit || n < (ssize_t)CAT_CHUNK, exit);
		if (exit || n < (ssize_t)CAT_CHUNK)
			break;
	}
	return NULL;
}

static unsigned readers_wanted(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	return cpus < 1 ? 1 : cpus > CAT_READERS ? CAT_READERS : (unsigned)cpus;
}

/* A reader's chunk buffer, in huge pages where the kernel gives them (fewer faults). */
static void *chunk_alloc(void)
{
	void *p = NULL;

	if (posix_memalign(&p, 2u << 20, CAT_CHUNK))
		return NULL;
	madvise(p, CAT_CHUNK, MADV_HUGEPAGE);
	return p;
}

/* The readers' stats summed, as one reader's (those whose clone was made). */
static void stats_sum(const struct cat_reader *rd, unsigned n, struct pony_layout_stats *ret)
{
	*ret = (struct pony_layout_stats){ 0 };
	for (unsigned i = 0; i < n; i++) {
		struct pony_layout_stats st;

		if (!rd[i].l)
			continue;
		pony_layout_stats(rd[i].l, &st);
		ret->member_bytes += st.member_bytes;
		ret->mount_bytes += st.mount_bytes;
		ret->zero_bytes += st.zero_bytes;
		ret->rebuilt += st.rebuilt;
		ret->regets += st.regets;
		ret->members_refused = MAX(ret->members_refused, st.members_refused);
	}
}

/*
 * Reads l to stdout on up to readers_wanted() threads, no more than it has
 * chunks, each with a clone of l; with l alone when no clone was made.
 */
static int cat_readers_run(struct pony_layout *l, const char *path, bool stats)
{
	struct cat_readers all = { .path = path, .origin = l, .lock = PTHREAD_MUTEX_INITIALIZER,
				   .turn_moved = PTHREAD_COND_INITIALIZER };
	struct cat_reader rd[CAT_READERS] = { 0 };
	uint64_t chunks = DIV_ROUND_UP(pony_layout_size(l), CAT_CHUNK);
	unsigned want = (unsigned)MIN((uint64_t)readers_wanted(), MAX(chunks, 1)), n;
	struct pony_layout_stats st;

	rd[0] = (struct cat_reader){ .all = &all, .buf = chunk_alloc() };
	if (!rd[0].buf)
		return cli_error("out of memory");
	for (n = 1; n < want; n++) {
		struct cat_reader *r = &rd[n];

		*r = (struct cat_reader){ .all = &all, .buf = chunk_alloc() };
		r->started = r->buf && !pthread_create(&r->thread, NULL, cat_reader_main, r);
		if (!r->started) {
			free(r->buf);
			break;
		}
	}
	cat_reader_main(&rd[0]);
	for (unsigned i = 1; i < n; i++)
		pthread_join(rd[i].thread, NULL);
	if (!all.next) {                /* no clone took a chunk: none was made */
		rd[0].l = l;
		cat_reader_main(&rd[0]);
	}
	stats_sum(rd, n, &st);
	if (stats)
		print_stats(path, &st);
	warn_refused(path, &st);
	/* The clones first: they check l's lease, l gives it back. */
	for (unsigned i = 0; i < n; i++) {
		if (rd[i].l != l)
			pony_layout_return(rd[i].l);
		free(rd[i].buf);
	}
	return all.exit;
}

/*
 * Straight from the members, through the layout (from s when not NULL).
 * On the mount, the layout of the first chunk only: each reader gets the
 * layout of the chunk it takes (pony_layout_seek, under the first one's
 * lease) while the others read theirs, rather than all of a large file's
 * layout pages one after the other before the first byte is read. From
 * another host, with one reader, the whole file's at once.
 */
static int cat_direct(int fd, const struct pony_layout_server *s, const char *path, bool stats)
{
	struct pony_layout *l;
	int r = s ? pony_layout_get_remote(s, path, 0, UINT64_MAX, &l) :
		pony_layout_get(fd, 0, CAT_CHUNK, &l);

	if (r < 0)
		return s ? remote_error(s, path, -r) : cli_layout_error(path, -r);
	r = cat_readers_run(l, path, stats);
	pony_layout_return(l);
	return r;
}

static int fs_cat_run(int argc, char **argv)
{
	bool direct = false, stats = false, insecure = false;
	struct pony_layout_server server = { .member_timeout_ms = cli_member_timeout_ms() };
	const char *path;
	int c, r;

	static const struct option longopts[] = {
		{ "direct", no_argument, NULL, 'd' },
		{ "stats", no_argument, NULL, 's' },
		{ "server", required_argument, NULL, 'S' },
		{ "psk", required_argument, NULL, 'k' },
		{ "insecure", no_argument, NULL, 'I' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	optind = 1;
	while ((c = getopt_long(argc, argv, "dsh", longopts, NULL)) != -1) {
		switch (c) {
		case 'd': direct = true; break;
		case 's': stats = true; break;
		case 'S': server.addr = optarg; break;
		case 'k': server.psk_file = optarg; break;
		case 'I': insecure = true; break;
		case 'h':
			printf("Usage: " CMD " [--direct [--stats]] FILE\n"
			       "       " CMD " --direct --server HOST:PORT --psk FILE|--insecure\n"
			       "           [--stats] PATH\n"
			       "FILE, a file of a pony mount, to stdout. Through the mount, or with\n"
			       "--direct straight from the volume's members by its layout\n"
			       "(docs/layout.md): every piece read in parallel, every block checked\n"
			       "against its CRC32C, and what a missing member or a bad block leaves\n"
			       "out rebuilt from the volume's copies or parity; holes read as zeros,\n"
			       "data the daemon still caches through the mount. Encrypted files are\n"
			       "refused: keys never leave the mount. --stats tells on stderr where\n"
			       "the bytes came from and how many blocks were rebuilt.\n"
			       "\n"
			       "With --server, on another host: the layout of PATH (from the mount's\n"
			       "root) comes from the mount's layout service (pony mount\n"
			       "--layout-listen), in TLS with the first key of --psk FILE, or in the\n"
			       "clear with --insecure; the bytes come from the members' NBD servers\n"
			       "(nbds:// members with the same key file). --member-timeout SECONDS\n"
			       "bounds each member's connection and reads (docs/nbd.md).\n");
			return CLI_EXIT_OK;
		default: return cli_usage_error(CMD, "bad option");
		}
	}
	if (optind != argc - 1)
		return cli_usage_error(CMD, "one FILE is needed");
	if (stats && !direct)
		return cli_usage_error(CMD, "--stats goes with --direct");
	if (server.addr && !direct)
		return cli_usage_error(CMD, "--server goes with --direct");
	if ((server.psk_file || insecure) && !server.addr)
		return cli_usage_error(CMD, "--psk and --insecure go with --server");
	if (server.addr && !server.psk_file == !insecure)
		return cli_usage_error(CMD, "--server needs --psk FILE or --insecure (one of them)");
	path = argv[optind];
	if (server.addr) {
		r = cat_direct(-1, &server, path, stats);
		return r ? r : CLI_EXIT_OK;
	}
	_cleanup_(closep) int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return cli_path_error(path, errno);
	if (direct) {
		r = cat_direct(fd, NULL, path, stats);
		return r ? r : CLI_EXIT_OK;
	}
	_cleanup_(freep) void *buf = util_aligned_alloc(CAT_CHUNK);
	if (!buf)
		return cli_error("out of memory");
	r = cat_mount(fd, path, buf);
	return r ? r : CLI_EXIT_OK;
}

const struct cli_command cli_fs_cat_command = {
	.name = "cat",
	.summary = "a file to stdout, through the mount or --direct from its members",
	.run = fs_cat_run,
};
