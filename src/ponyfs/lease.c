/*
 * lease.c - layout leases (docs/layout.md "Leases"), pNFS's promise: a
 * client holding a layout may read the blocks it names straight from the
 * devices, and no such block is reused for other data until the lease is
 * returned or expires.
 *
 * Copy-on-write does most of the work: an overwrite, truncate, punch or
 * unlink through the mount never changes a written block, it frees it.
 * A freed block a live lease names is "held": it enters the free table as
 * usual (so a crash, which ends every lease, loses no space), but the
 * allocator steps over it and reservations do not count it. Freeing such a
 * block recalls the lease (its holder sees RECALLED and should return it).
 * When space runs short, leases are revoked rather than writes failing:
 * a holder checks its lease after reading, sees EXPIRED and reads again,
 * so a revoked lease costs a re-read, never a wrong byte.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define LEASE_DEFAULT_MS 30000u
/* Leases a mount keeps at once: any user who can open a file may ask for
 * one, so past this the one nearest its end is revoked for the new one. */
#define LEASE_MAX 1024u

/* -- sorted runs --------------------------------------------------------------- */

/* The index of the first run of a[0..n) ending after block b. */
static size_t runs_find(const struct ponyfs_run *a, size_t n, uint64_t b)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (a[mid].pblock + a[mid].n <= b)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool runs_overlap(const struct ponyfs_run *a, size_t n, uint64_t p, uint64_t k)
{
	size_t i = runs_find(a, n, p);

	return i < n && a[i].pblock < p + k;
}

/* Adds [p, p + k) to the sorted runs, merged with every run it touches. */
static int runs_add(struct ponyfs_run **a, size_t *n, size_t *cap, uint64_t p, uint64_t k)
{
	size_t i = runs_find(*a, *n, p ? p - 1 : 0), j = i;
	uint64_t lo = p, hi = p + k;

	if (!k)
		return 0;
	/* [i, j): the runs that overlap or touch [p, p + k) */
	while (j < *n && (*a)[j].pblock <= hi) {
		lo = MIN(lo, (*a)[j].pblock);
		hi = MAX(hi, (*a)[j].pblock + (*a)[j].n);
		j++;
	}
	if (i == j) {
		void *grown = util_array_grow(*a, cap, *n, sizeof(**a), 16);

		if (!grown)
			return -ENOMEM;
		*a = grown;
		memmove(*a + i + 1, *a + i, (*n - i) * sizeof(**a));
		(*n)++;
	} else if (j - i > 1) {
		memmove(*a + i + 1, *a + j, (*n - j) * sizeof(**a));
		*n -= j - i - 1;
	}
	(*a)[i] = (struct ponyfs_run){ lo, hi - lo };
	return 0;
}

/* Sums the held runs into held_blocks. */
static void held_sum(struct ponyfs_leases *ls)
{
	ls->held_blocks = 0;
	for (size_t i = 0; i < ls->nheld; i++)
		ls->held_blocks += ls->held[i].n;
}

/* Adds the parts of [p, p + k) that lease l names to the held runs: blocks added. */
static uint64_t hold_named(struct ponyfs_leases *ls, const struct ponyfs_lease *l, uint64_t p,
			   uint64_t k)
{
	uint64_t before = ls->held_blocks;

	for (size_t i = runs_find(l->runs, l->nruns, p);
	     i < l->nruns && l->runs[i].pblock < p + k; i++) {
		uint64_t lo = MAX(p, l->runs[i].pblock);
		uint64_t hi = MIN(p + k, l->runs[i].pblock + l->runs[i].n);

		/* Out of memory: the blocks stay unheld, so the lease cannot
		 * keep its promise; it ends (the holder reads again). */
		if (runs_add(&ls->held, &ls->nheld, &ls->cap_held, lo, hi - lo) < 0)
			return UINT64_MAX;
	}
	held_sum(ls);
	return ls->held_blocks - before;
}

/* -- the leases ---------------------------------------------------------------- */

static struct ponyfs_lease *lease_find(struct ponyfs_leases *ls, uint32_t id)
{
	for (size_t i = 0; i < ls->n; i++)
		if (ls->l[i].id == id)
			return &ls->l[i];
	return NULL;
}

/* The held blocks again, from the live leases: what only ended leases named
 * is freed; the stripes write leases were given stay held. */
static void held_recount(struct ponyfs_leases *ls)
{
	struct ponyfs_run *old = ls->held;
	size_t nold = ls->nheld;

	ls->held = NULL;
	ls->nheld = ls->cap_held = 0;
	ls->held_blocks = 0;
	for (size_t i = 0; i < nold; i++)
		for (size_t j = 0; j < ls->n; j++)
			if (hold_named(ls, &ls->l[j], old[i].pblock, old[i].n) == UINT64_MAX)
				ls->l[j].deadline_ns = 0;       /* see hold_named() */
	for (size_t j = 0; j < ls->n; j++)
		for (size_t i = 0; i < ls->l[j].nwruns; i++)
			if (runs_add(&ls->held, &ls->nheld, &ls->cap_held, ls->l[j].wruns[i].pblock,
				     ls->l[j].wruns[i].n) < 0)
				ls->l[j].deadline_ns = 0;       /* cannot hold them: it ends */
	held_sum(ls);
	free(old);
}

static void lease_drop(struct ponyfs_leases *ls, size_t i)
{
	struct ponyfs_lease *e = &ls->l[i];

	for (size_t k = 0; k < e->nstaged; k++)
		free(e->staged[k].csums);
	free(e->staged);
	free(e->wruns);
	free(e->runs);
	ls->l[i] = ls->l[--ls->n];
}

void ponyfs_lease_expire_locked(struct ponyfs *fs, bool all)
{
	struct ponyfs_leases *ls = &fs->leases;
	uint64_t now = util_now_ns();
	size_t before = ls->n;

	for (size_t i = 0; i < ls->n;)
		if (all || ls->l[i].deadline_ns <= now)
			lease_drop(ls, i);
		else
			i++;
	if (ls->n != before && ls->nheld)
		held_recount(ls);
}

/* Marks e recalled, telling whoever listens once. */
static void lease_recall(struct ponyfs_leases *ls, struct ponyfs_lease *e)
{
	if (e->recalled)
		return;
	e->recalled = true;
	if (ls->recall_fn)
		ls->recall_fn(ls->recall_arg, e->id);
}

/* Recalls every lease given while the volume's members stood otherwise. */
static void recall_on_member_change(struct ponyfs *fs)
{
	uint64_t sig = ponyfs_layout_members_sig(fs);

	for (size_t i = 0; i < fs->leases.n; i++)
		if (fs->leases.l[i].members_sig != sig)
			lease_recall(&fs->leases, &fs->leases.l[i]);
}

/* The extents l names on the data region join lease e. */
static int lease_add_extents(struct ponyfs_lease *e, const struct vfs_layout *l)
{
	for (uint32_t i = 0; i < l->nextents; i++) {
		const struct vfs_layout_extent *x = &l->extents[i];
		int r;

		/* Only written blocks are read; unwritten ones read as zeros. */
		if (x->state != VFS_LAYOUT_DATA)
			continue;
		r = runs_add(&e->runs, &e->nruns, &e->cap_runs, x->volume_offset / BS,
			     x->length / BS);
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * Makes the layout just mapped into l a lease (l->lease: VFS_LEASE_NEW or
 * one to join; a join renews it). -ESTALE: the lease to join is gone, and
 * the holder must start its layout again.
 */
int ponyfs_lease_grant_locked(struct ponyfs *fs, struct vfs_layout *l)
{
	struct ponyfs_leases *ls = &fs->leases;
	struct ponyfs_lease *e;
	int r;

	ponyfs_lease_expire_locked(fs, false);
	if (l->lease == VFS_LEASE_NEW) {
		e = ponyfs_lease_new_locked(fs);
		if (!e)
			return -ENOMEM;
	} else {
		recall_on_member_change(fs);
		e = lease_find(ls, l->lease);
		/* A write lease is not a layout's: joining it is as joining none. */
		if (!e || e->write_ino)
			return -ESTALE;
	}
	r = lease_add_extents(e, l);
	if (r < 0) {
		lease_drop(ls, (size_t)(e - ls->l));
		return r;
	}
	l->lease_ms = ponyfs_lease_renew(fs, e);
	l->lease = e->id;
	return 0;
}

struct ponyfs_lease *ponyfs_lease_new_locked(struct ponyfs *fs)
{
	struct ponyfs_leases *ls = &fs->leases;
	struct ponyfs_lease *e;
	void *grown;

	if (ls->n >= LEASE_MAX) {
		size_t soonest = 0;

		for (size_t i = 1; i < ls->n; i++)
			if (ls->l[i].deadline_ns < ls->l[soonest].deadline_ns)
				soonest = i;
		lease_drop(ls, soonest);
		if (ls->nheld)
			held_recount(ls);
	}
	grown = util_array_grow(ls->l, &ls->cap, ls->n, sizeof(*ls->l), 8);
	if (!grown)
		return NULL;
	ls->l = grown;
	e = &ls->l[ls->n++];
	*e = (struct ponyfs_lease){ .id = ++ls->next_id, .members_sig = ponyfs_layout_members_sig(fs) };
	if (e->id == VFS_LEASE_NEW || !e->id)   /* wrapped: 0 and NEW are not ids */
		e->id = ls->next_id = 1;
	ponyfs_lease_renew(fs, e);
	return e;
}

uint64_t ponyfs_lease_renew(struct ponyfs *fs, struct ponyfs_lease *e)
{
	if (!fs->leases.ms)
		fs->leases.ms = LEASE_DEFAULT_MS;
	e->deadline_ns = util_now_ns() + fs->leases.ms * 1000000u;
	return fs->leases.ms;
}

struct ponyfs_lease *ponyfs_lease_find_locked(struct ponyfs *fs, uint32_t id)
{
	ponyfs_lease_expire_locked(fs, false);
	return lease_find(&fs->leases, id);
}

int ponyfs_lease_hold_locked(struct ponyfs *fs, struct ponyfs_lease *e, uint64_t p, uint64_t n)
{
	struct ponyfs_leases *ls = &fs->leases;
	int r = runs_add(&e->wruns, &e->nwruns, &e->cap_wruns, p, n);

	if (r >= 0)
		r = runs_add(&ls->held, &ls->nheld, &ls->cap_held, p, n);
	held_sum(ls);
	return r;
}

void ponyfs_lease_end_locked(struct ponyfs *fs, struct ponyfs_lease *e)
{
	lease_drop(&fs->leases, (size_t)(e - fs->leases.l));
	if (fs->leases.nheld)
		held_recount(&fs->leases);
}

/* Blocks [pblock, pblock + n) were freed: what a lease names is held, and the lease recalled. */
void ponyfs_lease_freed_locked(struct ponyfs *fs, uint64_t pblock, uint64_t n)
{
	struct ponyfs_leases *ls = &fs->leases;

	if (!ls->n)
		return;
	ponyfs_lease_expire_locked(fs, false);
	for (size_t i = 0; i < ls->n; i++) {
		uint64_t added = hold_named(ls, &ls->l[i], pblock, n);

		if (added == UINT64_MAX)
			ls->l[i].deadline_ns = 0;
		else if (runs_overlap(ls->l[i].runs, ls->l[i].nruns, pblock, n))
			lease_recall(ls, &ls->l[i]);
	}
	/* A lease that could not hold its blocks ends now, before any is reused. */
	ponyfs_lease_expire_locked(fs, false);
}

/*
 * Narrows [*start, *end) of free blocks to its first stretch no lease
 * holds: *start moves past a held run it is in, *end comes down to the
 * next held run. *start >= *end: nothing left.
 */
void ponyfs_lease_unheld(const struct ponyfs *fs, uint64_t *start, uint64_t *end)
{
	const struct ponyfs_leases *ls = &fs->leases;
	size_t i;

	if (!ls->nheld)
		return;
	i = runs_find(ls->held, ls->nheld, *start);
	if (i < ls->nheld && ls->held[i].pblock <= *start) {
		*start = ls->held[i].pblock + ls->held[i].n;
		i++;
	}
	if (i < ls->nheld)
		*end = MIN(*end, ls->held[i].pblock);
}

static int lease_op_locked(struct ponyfs *fs, uint32_t id, unsigned op, uint32_t *ret_state,
			   uint64_t *ret_ms)
{
	struct ponyfs_leases *ls = &fs->leases;
	struct ponyfs_lease *e;
	uint64_t now;

	if (op != VFS_LEASE_STATUS && op != VFS_LEASE_RETURN)
		return -EINVAL;
	ponyfs_lease_expire_locked(fs, false);
	recall_on_member_change(fs);
	e = lease_find(ls, id);
	*ret_state = !e ? VFS_LEASE_EXPIRED : e->recalled ? VFS_LEASE_RECALLED : VFS_LEASE_HELD;
	now = util_now_ns();
	*ret_ms = e && e->deadline_ns > now ? (e->deadline_ns - now) / 1000000u : 0;
	if (e && op == VFS_LEASE_RETURN)
		ponyfs_lease_end_locked(fs, e);
	return 0;
}

int ponyfs_layout_lease(struct vfs *v, uint32_t lease, unsigned op, uint32_t *ret_state,
			uint64_t *ret_ms)
{
	struct ponyfs *fs = ponyfs_of(v);

	return PONYFS_LOCKED(fs, lease_op_locked(fs, lease, op, ret_state, ret_ms));
}

void ponyfs_layout_recall_watch(struct vfs *v, void (*fn)(void *arg, uint32_t lease), void *arg)
{
	struct ponyfs *fs = ponyfs_of(v);

	pthread_mutex_lock(&fs->lock);
	fs->leases.recall_fn = fn;
	fs->leases.recall_arg = arg;
	pthread_mutex_unlock(&fs->lock);
}

void ponyfs_lease_fini(struct ponyfs *fs)
{
	ponyfs_lease_expire_locked(fs, true);
	free(fs->leases.l);
	free(fs->leases.held);
	fs->leases.l = NULL;
	fs->leases.held = NULL;
	fs->leases.n = fs->leases.cap = fs->leases.nheld = fs->leases.cap_held = 0;
}
