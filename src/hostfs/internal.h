/*
 * internal.h - hostfs's inode table, shared by its files: one record per host
 * inode (st_dev, st_ino) holding an O_PATH descriptor, as libfuse's
 * passthrough_ll keeps them, so every operation is relative to a descriptor
 * and never resolves a path a concurrent rename could change.
 */
#ifndef PONY_HOSTFS_INTERNAL_H
#define PONY_HOSTFS_INTERNAL_H

#include <pthread.h>

#include "pony/hostfs.h"
#include "pony/vfs.h"

/* The vfs id of an inode is its address; the root's is VFS_ROOT_INO. */
struct hostfs_inode {
	struct hostfs_inode *hnext;     /* (dev, ino) hash chain; under fs->lock */
	dev_t dev;
	ino_t ino;
	int fd;                         /* O_PATH|O_NOFOLLOW, or -1: handle */
	struct file_handle *handle;     /* non-directories, when handles work */
	uint64_t nlookup;               /* references; under fs->lock */
};

struct hostfs {
	struct vfs vfs;
	pthread_mutex_t lock;           /* guards the hash and every nlookup */
	struct hostfs_inode root;       /* never in the hash, never freed */
	struct hostfs_inode **buckets;
	size_t nbuckets, count;
	unsigned flags;                 /* HOSTFS_* */
	bool use_handles;               /* root, and the filesystem has handles */
	int mount_id;                   /* of the root, for name_to_handle_at */
	int mount_fd;                   /* the root opened for real: O_PATH will
					 * not do for open_by_handle_at; or -1 */
	uint8_t uuid[16];               /* the filesystem's (FS_IOC_GETFSUUID) */
	_Atomic int new_inode_score;    /* > 0: recent lookups found new
					 * inodes (hostfs_do_lookup_known) */
	_Atomic bool no_link_empty_path; /* linkat(AT_EMPTY_PATH) refused: /proc */
	size_t max_fds;                 /* above this many descriptors held (by
					 * all instances) new files are handles */
};

static inline struct hostfs *hostfs_of(struct vfs *fs)
{
	return (struct hostfs *)fs;
}

struct hostfs_inode *hostfs_inode_get(struct hostfs *h, uint64_t ino);
/* Looks name up under parent and takes a reference: the entry's inode. */
int hostfs_do_lookup(struct hostfs *h, struct hostfs_inode *parent, const char *name,
		     struct vfs_entry *ret);
/* The same, first asking whether the table holds the name's inode already. */
int hostfs_do_lookup_known(struct hostfs *h, struct hostfs_inode *parent, const char *name,
			   struct vfs_entry *ret);
/* Takes over *fd (an O_PATH descriptor): its inode, referenced, in ret. */
int hostfs_inode_of_fd(struct hostfs *h, int *fd, struct vfs_entry *ret);
void hostfs_forget(struct vfs *fs, uint64_t ino, uint64_t nlookup);
/* One more reference on an inode the caller holds one of. */
void hostfs_inode_ref(struct hostfs *h, uint64_t ino);
/* Frees every inode of the table (at destroy). */
void hostfs_inodes_free(struct hostfs *h);

/*
 * An O_PATH descriptor of in: its own (directories, or without handles), or
 * one opened from its file handle, which *ret_tmp then holds for the caller
 * to close. Keeping descriptors only for directories lets a mount hold more
 * files than RLIMIT_NOFILE allows, as libfuse's passthrough_hp does.
 */
int hostfs_inode_fd(struct hostfs *h, struct hostfs_inode *in, int *ret_tmp);
void hostfs_handles_probe(struct hostfs *h);
/* handle.c: the filesystem's uuid into h->uuid; the file-handle hooks (overlayfs's origin xattr holds one). */
void hostfs_uuid_probe(struct hostfs *h);
int hostfs_encode_fh(struct vfs *fs, uint64_t ino, void *buf, size_t size, int *ret_type,
		     uint8_t uuid[16]);
int hostfs_decode_fh(struct vfs *fs, const uint8_t uuid[16], const void *buf, size_t len,
		     int type, struct vfs_entry *ret);

/* "/proc/self/fd/N" for the descriptor, into buf[32]. */
const char *hostfs_fd_path(int fd, char buf[static 32]);

#endif
