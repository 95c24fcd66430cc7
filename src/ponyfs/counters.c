/*
 * counters.c - ponyfs's work counters and state as text, the vfs
 * `counters` hook: a FUSE mount hands them out through an ioctl (`pony stat
 * --counters`), so a test on a real mount can prove what a call did not do
 * (no extent walk for a statx without blocks, no flush for DONT_SYNC), and
 * an administrator sees the metadata chunks taken from the data region
 * and a failed background commit (commit_error, the errno that made the
 * filesystem read-only; none while all is well).
 */
#include <stdio.h>

#include "internal.h"

int ponyfs_counters(struct vfs *v, char *buf, size_t size)
{
	struct ponyfs *fs = ponyfs_of(v);
	struct ponyfs_stats s;
	uint64_t sbytes, speak;
	int broken;

	ponyfs_get_stats(v, &s);
	pthread_mutex_lock(&fs->lock);
	broken = fs->broken;
	pthread_mutex_unlock(&fs->lock);
	pthread_mutex_lock(&fs->stream_lock);
	sbytes = fs->stream_bytes;
	speak = fs->stream_bytes_peak;
	pthread_mutex_unlock(&fs->stream_lock);
	return snprintf(buf, size,
			"commits %llu\nextent_walks %llu\ndata_blocks_written %llu\n"
			"data_flushes %llu\nwritebacks %llu\ncsum_errors %llu\ndirty_bytes %llu\n"
			"overwrite_loans %llu\nmeta_chunks %llu\nspace_commits %llu\n"
			"checkpoints %llu\ncache_slab_bytes %llu\nrow_hits %llu\nrow_misses %llu\n"
			"blocks_cached %llu\nbound_writebacks %llu\nstream_hits %llu\n"
			"stream_refs %llu\nstream_bytes %llu\nstream_bytes_peak %llu\ncommit_error %s\n",
			(unsigned long long)s.commits, (unsigned long long)s.extent_walks,
			(unsigned long long)s.data_blocks_written,
			(unsigned long long)s.data_flushes, (unsigned long long)s.writebacks,
			(unsigned long long)s.csum_errors,
			(unsigned long long)ponyfs_dirty_bytes(v),
			(unsigned long long)s.overwrite_loans, (unsigned long long)s.meta_chunks,
			(unsigned long long)s.space_commits, (unsigned long long)s.checkpoints,
			(unsigned long long)s.cache_slab_bytes, (unsigned long long)s.row_hits,
			(unsigned long long)s.row_misses, (unsigned long long)s.blocks_cached,
			(unsigned long long)s.bound_writebacks,
			(unsigned long long)__atomic_load_n(&fs->stream_hits, __ATOMIC_RELAXED),
			(unsigned long long)__atomic_load_n(&fs->stream_refs, __ATOMIC_RELAXED),
			(unsigned long long)sbytes, (unsigned long long)speak,
			broken ? ponyfs_errno_name(broken) : "none");
}
