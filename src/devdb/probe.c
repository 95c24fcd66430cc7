/*
 * probe.c - the probe engine: runs the superblock probers over a device in
 * libblkid's order with its "safe probe" rules (the first RAID or crypto
 * signature wins; two filesystems are ambivalent, not silently picked), then
 * the partition-table probers, and probes each partition as a device of its
 * own. Every read goes through devdb_probe_get(), which refuses ranges
 * outside the device, so no prober can read past it whatever the input.
 */
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "probe.h"

#define PROBE_MAX_READ (16u << 20)
/*
 * A dozen probers look at the first 8 KiB (MBR, LUKS, LVM, FAT, NTFS, ext,
 * XFS, MD 1.1/1.2, bcache, swap's first magics): read it once, as one I/O,
 * rather than a dozen tiny reads. Beyond it, reads are exactly what a
 * prober asks for.
 */
#define PROBE_HEAD 8192u
/*
 * Beyond the head, magics sit a few bytes apart (swap's page-size magic at
 * 32758, ISO 9660's at 32769, UDF's at 32777; swap's at 65526, btrfs's at
 * 65600): a small read takes the next PROBE_SMALL bytes with it, which
 * saves a system call per neighbour for a few dozen bytes of copying.
 */
#define PROBE_SMALL 128u

struct probe_buf {
	struct probe_buf *next;
	uint64_t off, len;
	uint8_t data[];
};

/*
 * libblkid's order: RAIDs and crypto first (so a RAID member is not taken
 * for the filesystem it mirrors), then filesystems; within ext, the most
 * specific first. A table, not code, so `pony dev probe` and the fuzzer see
 * the same list.
 */
static const struct devdb_prober *const probers[] = {
	&devdb_mdraid_prober,
	&devdb_ponyvol_prober,
	&devdb_bcache_prober,
	&devdb_lvm2_prober,
	&devdb_luks_prober,
	&devdb_bitlocker_prober,
	&devdb_vfat_prober,
	&devdb_swap_prober,
	&devdb_xfs_prober,
	&devdb_ext4dev_prober,
	&devdb_ext4_prober,
	&devdb_ext3_prober,
	&devdb_ext2_prober,
	&devdb_jbd_prober,
	&devdb_udf_prober,
	&devdb_iso9660_prober,
	&devdb_zfs_prober,
	&devdb_ntfs_prober,
	&devdb_squashfs_prober,
	&devdb_squashfs3_prober,
	&devdb_btrfs_prober,
	&devdb_exfat_prober,
	&devdb_f2fs_prober,
	&devdb_erofs_prober,
	&devdb_ponyfs_prober,
};

static const struct devdb_pt_prober *const pt_probers[] = {
	&devdb_dos_prober,
	&devdb_gpt_prober,
};

const char *const *devdb_probe_formats(void)
{
	static const char *names[ARRAY_SIZE(probers) + ARRAY_SIZE(pt_probers) + 1];

	if (!names[0]) {
		size_t n = 0;

		for (size_t i = 0; i < ARRAY_SIZE(probers); i++)
			names[n++] = probers[i]->name;
		for (size_t i = 0; i < ARRAY_SIZE(pt_probers); i++)
			names[n++] = pt_probers[i]->name;
	}
	return names;
}

const uint8_t *devdb_probe_get(struct devdb_probe *pr, uint64_t off, uint64_t len)
{
	struct probe_buf *b;
	uint64_t want_off = 0;
	int64_t r;

	if (pr->io_error || len == 0 || len > PROBE_MAX_READ || off > pr->size ||
	    len > pr->size - off)
		return NULL;
	for (b = pr->bufs; b; b = b->next)
		if (off >= b->off && off + len <= b->off + b->len)
			return b->data + (off - b->off);
	if (off + len <= PROBE_HEAD) {
		len = MIN((uint64_t)PROBE_HEAD, pr->size);
		want_off = off;
		off = 0;
	} else if (len < PROBE_SMALL) {
		len = MIN((uint64_t)PROBE_SMALL, pr->size - off);
	}
	b = malloc(sizeof(*b) + len);
	if (!b) {
		pr->io_error = -ENOMEM;
		return NULL;
	}
	r = pr->rd->read(pr->rd->ctx, b->data, len, pr->base + off);
	pr->reads++;
	if (r < 0 || (uint64_t)r != len) {
		free(b);
		pr->io_error = r < 0 ? (int)r : -EIO;
		return NULL;
	}
	pr->bytes_read += len;
	b->off = off;
	b->len = len;
	b->next = pr->bufs;
	pr->bufs = b;
	return b->data + want_off;
}

void devdb_probe_release(struct devdb_probe *pr)
{
	while (pr->bufs) {
		struct probe_buf *next = pr->bufs->next;

		free(pr->bufs);
		pr->bufs = next;
	}
}

uint64_t devdb_magic_offset(const struct devdb_probe *pr, const struct devdb_magic *mag)
{
	uint64_t off;

	if (mag->kboff >= 0)
		off = ((uint64_t)mag->kboff << 10) + mag->sboff;
	else
		off = pr->size - ((uint64_t)-mag->kboff << 10) + mag->sboff;
	if (mag->session)
		off += pr->session_offset;
	return off;
}

/* 1: matched (*ret_mag set, NULL for magic-less probers), 0: no match. */
static int probe_match_magic(struct devdb_probe *pr, const struct devdb_prober *p,
			     const struct devdb_magic **ret_mag)
{
	*ret_mag = NULL;
	if (!p->magics[0].len)
		return 1;
	for (const struct devdb_magic *m = p->magics; m->len; m++) {
		const uint8_t *buf;

		if (m->kboff < 0 && ((uint64_t)-m->kboff << 10) > pr->size)
			continue;
		buf = devdb_probe_get(pr, devdb_magic_offset(pr, m), m->len);
		if (buf && !memcmp(buf, m->bytes, m->len)) {
			*ret_mag = m;
			return 1;
		}
		if (pr->io_error)
			return pr->io_error;
	}
	return 0;
}

static const char *usage_name(unsigned usage)
{
	if (usage & DEVDB_USAGE_FILESYSTEM)
		return "filesystem";
	if (usage & DEVDB_USAGE_RAID)
		return "raid";
	if (usage & DEVDB_USAGE_CRYPTO)
		return "crypto";
	return "other";
}

static int ambivalent_append(char **desc, const struct devdb_probe *pr, const struct devdb_prober *p)
{
	const char *ver = devdb_tags_get(&pr->vals, "VERSION");
	char *s = NULL;
	int r;

	r = asprintf(&s, "%s%s%s:%s%s%s", *desc ? *desc : "", *desc ? " " : "",
		     usage_name(p->usage), p->name, ver ? ":" : "", ver ? ver : "");
	if (r < 0)
		return -ENOMEM;
	free(*desc);
	*desc = s;
	return 0;
}

/*
 * libblkid's superblocks_safeprobe(): every prober in turn; a RAID or crypto
 * match ends the search; more than one match with any intolerant one is
 * ambivalent. On FOUND the first match's values are in *ret_tags.
 */
static int probe_superblocks(struct devdb_probe *pr, struct devdb_tags *ret_tags,
			     char **ret_ambivalent, unsigned *ret_usage)
{
	struct devdb_tags first = { 0 };
	unsigned count = 0, intolerant = 0, first_usage = 0;
	char *desc = NULL;
	int r = 0;

	if (pr->size <= 1024)
		return DEVDB_PROBE_NONE;
	for (size_t i = 0; i < ARRAY_SIZE(probers); i++) {
		const struct devdb_prober *p = probers[i];
		const struct devdb_magic *mag;

		if (p->minsz && p->minsz > pr->size)
			continue;
		if ((p->usage & DEVDB_USAGE_RAID) && pr->tiny)
			continue;
		r = probe_match_magic(pr, p, &mag);
		if (r < 0)
			break;
		if (r == 0)
			continue;
		r = p->probe(pr, mag);
		if (r == 0 && pr->io_error)
			r = pr->io_error;
		if (r != 0) {
			devdb_tags_done(&pr->vals);
			if (r < 0)
				break;
			r = 0;
			continue;
		}
		if (devdb_tags_add(&pr->vals, "TYPE", p->name) < 0 ||
		    devdb_tags_add(&pr->vals, "USAGE", usage_name(p->usage)) < 0 ||
		    ambivalent_append(&desc, pr, p) < 0) {
			r = -ENOMEM;
			break;
		}
		if (pr->tiny && !count) {
			first = pr->vals;
			pr->vals = (struct devdb_tags){ 0 };
			first_usage = p->usage;
			count = 1;
			break;
		}
		count++;
		if (p->usage & (DEVDB_USAGE_RAID | DEVDB_USAGE_CRYPTO)) {
			if (count == 1) {
				first = pr->vals;
				pr->vals = (struct devdb_tags){ 0 };
				first_usage = p->usage;
			}
			break;
		}
		if (!(p->flags & DEVDB_PROBER_TOLERANT))
			intolerant++;
		if (count == 1) {
			first = pr->vals;
			pr->vals = (struct devdb_tags){ 0 };
			first_usage = p->usage;
		}
		devdb_tags_done(&pr->vals);
	}
	devdb_tags_done(&pr->vals);
	if (r < 0) {
		devdb_tags_done(&first);
		free(desc);
		return r;
	}
	if (count > 1 && intolerant) {
		devdb_tags_done(&first);
		*ret_ambivalent = desc;
		return DEVDB_PROBE_AMBIVALENT;
	}
	free(desc);
	if (!count)
		return DEVDB_PROBE_NONE;
	*ret_tags = first;
	*ret_usage = first_usage;
	return DEVDB_PROBE_FOUND;
}

static int probe_pt(struct devdb_probe *pr, struct devdb_pt *pt)
{
	for (size_t i = 0; i < ARRAY_SIZE(pt_probers); i++) {
		int r;

		memset(pt, 0, sizeof(*pt));
		r = pt_probers[i]->probe(pr, pt);
		if (r == 0 && pr->io_error)
			r = pr->io_error;
		if (r == 0) {
			snprintf(pt->type, sizeof(pt->type), "%s", pt_probers[i]->name);
			return 1;
		}
		free(pt->e);
		memset(pt, 0, sizeof(*pt));
		if (r < 0)
			return r;
	}
	return 0;
}

int devdb_pt_add(struct devdb_pt *pt, const struct devdb_pt_entry *e)
{
	if (pt->n == pt->cap) {
		size_t cap = pt->cap ? pt->cap * 2 : 8;
		struct devdb_pt_entry *v = realloc(pt->e, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		pt->e = v;
		pt->cap = cap;
	}
	pt->e[pt->n++] = *e;
	return 0;
}

static int part_tags(struct devdb_part *part, const struct devdb_pt *pt,
		     const struct devdb_pt_entry *e)
{
	struct devdb_tags *t = &part->tags;
	char buf[64];
	int r = 0;

	r |= devdb_tags_add(t, "PART_ENTRY_SCHEME", pt->type);
	if (e->name[0]) {
		r |= devdb_tags_add(t, "PART_ENTRY_NAME", e->name);
		r |= devdb_tags_add(t, "PARTLABEL", e->name);
	}
	if (e->uuid[0]) {
		r |= devdb_tags_add(t, "PART_ENTRY_UUID", e->uuid);
		r |= devdb_tags_add(t, "PARTUUID", e->uuid);
	}
	r |= devdb_tags_add(t, "PART_ENTRY_TYPE", e->type);
	if (e->flags) {
		snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)e->flags);
		r |= devdb_tags_add(t, "PART_ENTRY_FLAGS", buf);
	}
	snprintf(buf, sizeof(buf), "%u", e->number);
	r |= devdb_tags_add(t, "PART_ENTRY_NUMBER", buf);
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)e->start);
	r |= devdb_tags_add(t, "PART_ENTRY_OFFSET", buf);
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)e->size);
	r |= devdb_tags_add(t, "PART_ENTRY_SIZE", buf);
	return r ? -ENOMEM : 0;
}

static void probe_init(struct devdb_probe *pr, const struct devdb_reader *rd, uint64_t base,
		       uint64_t size, const struct devdb_probe_opts *opts)
{
	memset(pr, 0, sizeof(*pr));
	pr->rd = rd;
	pr->base = base;
	pr->size = size;
	pr->tiny = size <= 1440ull * 1024;
	pr->session_offset = opts ? opts->session_offset : 0;
}

static void probe_done(struct devdb_probe *pr, struct devdb_probe_result *res)
{
	devdb_probe_release(pr);
	devdb_tags_done(&pr->vals);
	res->bytes_read += pr->bytes_read;
	res->reads += pr->reads;
}

/* The superblocks inside one partition: a window on the same reader. */
static int probe_partition(const struct devdb_reader *rd, const struct devdb_pt *pt,
			   const struct devdb_pt_entry *e, struct devdb_probe_result *res)
{
	struct devdb_part *part = &res->parts[res->nparts];
	struct devdb_probe pr;
	struct devdb_tags fs = { 0 };
	unsigned usage = 0;
	uint64_t off = e->start * 512, size = e->size * 512;
	int r;

	memset(part, 0, sizeof(*part));
	part->number = e->number;
	if (off > rd->size)
		off = rd->size;
	if (size > rd->size - off)
		size = rd->size - off;  /* a table that claims more than the disk */
	part->offset = off;
	part->size = size;
	res->nparts++;
	r = part_tags(part, pt, e);
	if (r < 0)
		return r;
	probe_init(&pr, rd, off, size, NULL);
	r = probe_superblocks(&pr, &fs, &part->ambivalent, &usage);
	probe_done(&pr, res);
	if (r < 0)
		return r;
	part->status = r;
	for (size_t i = 0; i < fs.n; i++)
		if (devdb_tags_add(&part->tags, fs.v[i].name, fs.v[i].value) < 0)
			r = -ENOMEM;
	devdb_tags_done(&fs);
	return r < 0 ? r : 0;
}

/* The partition table, read through pr (the whole disk: its buffers are
 * the superblock probers', so the first 8 KiB is not read twice). */
static int probe_partitions(const struct devdb_reader *rd, struct devdb_probe *pr,
			    struct devdb_probe_result *res)
{
	struct devdb_pt pt;
	int r;

	pr->io_error = 0;
	r = pr->size > 1024 ? probe_pt(pr, &pt) : 0;
	if (r <= 0)
		return r;
	if ((pt.id[0] && devdb_tags_add(&res->tags, "PTUUID", pt.id) < 0) ||
	    devdb_tags_add(&res->tags, "PTTYPE", pt.type) < 0) {
		free(pt.e);
		return -ENOMEM;
	}
	res->parts = calloc(pt.n ? pt.n : 1, sizeof(*res->parts));
	if (!res->parts) {
		free(pt.e);
		return -ENOMEM;
	}
	for (size_t i = 0; i < pt.n && r >= 0; i++)
		r = probe_partition(rd, &pt, &pt.e[i], res);
	free(pt.e);
	return r < 0 ? r : 0;
}

int devdb_probe_reader(const struct devdb_reader *rd, const struct devdb_probe_opts *opts,
		       struct devdb_probe_result **ret)
{
	struct devdb_probe_result *res = calloc(1, sizeof(*res));
	struct devdb_probe pr;
	unsigned usage = 0;
	int r;

	if (!res)
		return -ENOMEM;
	probe_init(&pr, rd, 0, rd->size, opts);
	r = probe_superblocks(&pr, &res->tags, &res->ambivalent, &usage);
	if (r >= 0)
		res->status = r;
	/* A RAID member's table belongs to the array (libblkid's IGNORE_PT). */
	if (r >= 0 && !(opts && opts->no_partitions) && !(usage & DEVDB_USAGE_RAID)) {
		size_t before = res->tags.n;

		r = probe_partitions(rd, &pr, res);
		if (r >= 0 && res->tags.n > before && res->status == DEVDB_PROBE_NONE)
			res->status = DEVDB_PROBE_FOUND;
	}
	probe_done(&pr, res);
	if (r < 0) {
		devdb_probe_result_free(res);
		return r;
	}
	*ret = res;
	return 0;
}

void devdb_probe_result_free(struct devdb_probe_result *r)
{
	if (!r)
		return;
	devdb_tags_done(&r->tags);
	free(r->ambivalent);
	for (size_t i = 0; i < r->nparts; i++) {
		devdb_tags_done(&r->parts[i].tags);
		free(r->parts[i].ambivalent);
	}
	free(r->parts);
	free(r);
}

struct mem_reader {
	const uint8_t *buf;
};

static int64_t mem_read(void *ctx, void *buf, size_t len, uint64_t off)
{
	const struct mem_reader *m = ctx;

	memcpy(buf, m->buf + off, len);
	return (int64_t)len;
}

int devdb_probe_buffer(const void *buf, size_t len, const struct devdb_probe_opts *opts,
		       struct devdb_probe_result **ret)
{
	struct mem_reader m = { .buf = buf };
	struct devdb_reader rd = { .size = len, .ctx = &m, .read = mem_read };

	return devdb_probe_reader(&rd, opts, ret);
}

static int64_t fd_read(void *ctx, void *buf, size_t len, uint64_t off)
{
	int fd = *(int *)ctx;
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (int64_t)done;
}

int devdb_probe_pt_entry(int fd, uint64_t size, uint64_t start, unsigned number,
			 struct devdb_tags *tags)
{
	struct devdb_reader rd = { .size = size, .ctx = &fd, .read = fd_read };
	struct devdb_probe pr;
	struct devdb_part part = { 0 };
	struct devdb_pt pt;
	const struct devdb_pt_entry *hit = NULL;
	int r;

	probe_init(&pr, &rd, 0, rd.size, NULL);
	r = pr.size > 1024 ? probe_pt(&pr, &pt) : 0;
	devdb_probe_release(&pr);
	if (r <= 0)
		return r;
	/* libblkid's blkid_partlist_devno_to_partition(): the entry that
	 * starts where the kernel's partition does; its number if several */
	for (size_t i = 0; i < pt.n; i++)
		if (pt.e[i].start == start && (!hit || pt.e[i].number == number))
			hit = &pt.e[i];
	r = hit ? part_tags(&part, &pt, hit) : 0;
	/* libblkid names the table an extended partition (a 1 KiB device of
	 * its own) carries without reading it */
	if (r == 0 && hit && !strcmp(pt.type, "dos") && !devdb_tags_get(tags, "PTTYPE") &&
	    (!strcmp(hit->type, "0x5") || !strcmp(hit->type, "0xf") || !strcmp(hit->type, "0x85")))
		r = devdb_tags_add(tags, "PTTYPE", "dos");
	free(pt.e);
	for (size_t i = 0; r == 0 && hit && i < part.tags.n; i++)
		r = devdb_tags_add(tags, part.tags.v[i].name, part.tags.v[i].value);
	devdb_tags_done(&part.tags);
	return r < 0 ? r : hit ? 1 : 0;
}

int devdb_probe_fd_size(int fd, uint64_t size, const struct devdb_probe_opts *opts,
			struct devdb_probe_result **ret)
{
	struct devdb_reader rd = { .size = size, .ctx = &fd, .read = fd_read };

	return devdb_probe_reader(&rd, opts, ret);
}
