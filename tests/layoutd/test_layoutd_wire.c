/*
 * test_layoutd_wire.c - the layout control socket's messages
 * (include/pony/layoutd.h): a layout page survives encode and decode field
 * for field, its bytes are little-endian where docs/layout.md says, and a
 * decoder given a payload with counts past its length or its arrays, or
 * an extent whose indexes point outside them, says EPROTO rather than
 * letting a client follow them.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "pony/layoutd.h"

struct page {
	struct vfs_layout l;
	struct vfs_layout_extent e[LAYOUTD_MAX_EXTENTS];
	uint32_t c[LAYOUTD_MAX_CSUMS];
	struct vfs_layout_piece p[LAYOUTD_MAX_PIECES];
};

static void page_init(struct page *g)
{
	memset(g, 0, sizeof(*g));
	g->l = (struct vfs_layout){ .extents = g->e, .max_extents = LAYOUTD_MAX_EXTENTS,
				    .csums = g->c, .max_csums = LAYOUTD_MAX_CSUMS,
				    .pieces = g->p, .max_pieces = LAYOUTD_MAX_PIECES };
}

/* Two data extents (two blocks, one block), a hole, with three pieces. */
static void page_fill(struct page *g)
{
	page_init(g);
	g->l.flags = VFS_LAYOUT_ON_VOLUME | VFS_LAYOUT_COMPLETE;
	g->l.block_size = 4096;
	g->l.size = 3 * 4096 + 17;
	g->l.next = 4 * 4096;
	g->l.lease = 0x01020304;
	g->l.lease_ms = 30000;
	g->e[0] = (struct vfs_layout_extent){ 0, 8192, 1ull << 40, VFS_LAYOUT_DATA, 0, 0, 2 };
	g->e[1] = (struct vfs_layout_extent){ 8192, 4096, 77 * 4096, VFS_LAYOUT_DATA, 2, 2, 1 };
	g->e[2] = (struct vfs_layout_extent){ 12288, 4096, VFS_LAYOUT_NO_OFFSET, VFS_LAYOUT_HOLE,
					      0, 3, 0 };
	g->c[0] = 0xdeadbeef;
	g->c[1] = 1;
	g->c[2] = 0x80000000;
	g->p[0] = (struct vfs_layout_piece){ 0, 4096, 1 << 20, 3, VFS_PIECE_DATA };
	g->p[1] = (struct vfs_layout_piece){ 4096, 4096, 2 << 20, 4, VFS_PIECE_P };
	g->p[2] = (struct vfs_layout_piece){ 8192, 4096, 3 << 20, 5, VFS_PIECE_Q };
	g->l.nextents = 3;
	g->l.ncsums = 3;
	g->l.npieces = 3;
}

static uint8_t buf[LAYOUTD_MAX_PAYLOAD];

static void test_round_trip(void **state)
{
	static struct page in, out;
	size_t n;

	page_fill(&in);
	n = layoutd_layout_encode(&in.l, buf);
	assert_int_equal(n, sizeof(struct layoutd_layout_head) + 3 * 40 + 3 * 4 + 3 * 32);
	/* Little-endian where the table says: the lease at byte 24. */
	assert_int_equal(buf[24], 0x04);
	assert_int_equal(buf[27], 0x01);
	page_init(&out);
	assert_int_equal(layoutd_layout_decode(buf, n, &out.l), 0);
	assert_int_equal(out.l.flags, in.l.flags);
	assert_int_equal(out.l.size, in.l.size);
	assert_int_equal(out.l.next, in.l.next);
	assert_int_equal(out.l.lease, in.l.lease);
	assert_int_equal(out.l.lease_ms, in.l.lease_ms);
	assert_memory_equal(out.e, in.e, 3 * sizeof(in.e[0]));
	assert_memory_equal(out.c, in.c, 3 * sizeof(in.c[0]));
	assert_memory_equal(out.p, in.p, 3 * sizeof(in.p[0]));
}

static void test_malformed_pages_are_refused(void **state)
{
	static struct page in, out;
	size_t n;

	page_fill(&in);
	n = layoutd_layout_encode(&in.l, buf);
	page_init(&out);
	assert_int_equal(layoutd_layout_decode(buf, n - 1, &out.l), -EPROTO);
	assert_int_equal(layoutd_layout_decode(buf, 10, &out.l), -EPROTO);
	/* An extent's checksums past those sent. */
	in.e[1].first_csum = 3;
	n = layoutd_layout_encode(&in.l, buf);
	assert_int_equal(layoutd_layout_decode(buf, n, &out.l), -EPROTO);
	/* Its pieces past those sent. */
	page_fill(&in);
	in.e[1].npieces = 2;
	n = layoutd_layout_encode(&in.l, buf);
	assert_int_equal(layoutd_layout_decode(buf, n, &out.l), -EPROTO);
	/* More entries than the reader's arrays hold. */
	page_fill(&in);
	n = layoutd_layout_encode(&in.l, buf);
	out.l.max_pieces = 2;
	assert_int_equal(layoutd_layout_decode(buf, n, &out.l), -EPROTO);
}

static void test_headers(void **state)
{
	struct layoutd_hdr h = layoutd_hdr_make(LAYOUTD_GET, 24, 5);

	assert_int_equal(layoutd_hdr_check(&h, 24), 0);
	assert_int_equal(layoutd_hdr_check(&h, 23), -EPROTO);
	h.version = cpu_to_le16(LAYOUTD_VERSION + 1);
	assert_int_equal(layoutd_hdr_check(&h, 24), -EPROTO);
	h = layoutd_hdr_make(LAYOUTD_GET, 24, 5);
	assert_memory_equal(&h, "PLAY", 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_malformed_pages_are_refused),
		cmocka_unit_test(test_headers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
