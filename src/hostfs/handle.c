/*
 * handle.c - hostfs's file handles: name_to_handle_at() of an inode and
 * open_by_handle_at() back, with the filesystem's uuid beside them. The
 * union keeps one in overlayfs's origin xattr (struct ovl_fb), so the kernel
 * finds the lower file a copied-up one came from, and pony finds the one a
 * kernel copy-up came from.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>

#include "internal.h"
#include "pony/util.h"

#ifndef FS_IOC_GETFSUUID
struct fsuuid2 {
	uint8_t len;
	uint8_t uuid[16];
};
#define FS_IOC_GETFSUUID _IOR(0x15, 0, struct fsuuid2)
#endif

void hostfs_uuid_probe(struct hostfs *h)
{
	struct fsuuid2 u = { 0 };
	int fd = openat(h->root.fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	memset(h->uuid, 0, sizeof(h->uuid));
	if (fd < 0)
		return;
	/* The superblock's uuid (Linux 6.5): what overlayfs records too. */
	if (ioctl(fd, FS_IOC_GETFSUUID, &u) == 0 && u.len <= sizeof(h->uuid))
		memcpy(h->uuid, u.uuid, u.len);
	close(fd);
}

int hostfs_encode_fh(struct vfs *fs, uint64_t ino, void *buf, size_t size, int *ret_type,
		     uint8_t uuid[16])
{
	struct hostfs *h = hostfs_of(fs);
	_cleanup_(closep) int tmp = -1;
	int fd = hostfs_inode_fd(h, hostfs_inode_get(h, ino), &tmp);
	_cleanup_(freep) struct file_handle *fh = malloc(sizeof(*fh) + MAX_HANDLE_SZ);
	int mount_id;

	if (fd < 0)
		return fd;
	if (!fh)
		return -ENOMEM;
	fh->handle_bytes = MAX_HANDLE_SZ;
	if (name_to_handle_at(fd, "", fh, &mount_id, AT_EMPTY_PATH) < 0)
		return -errno;
	if (fh->handle_bytes > size)
		return -EOVERFLOW;
	memcpy(buf, fh->f_handle, fh->handle_bytes);
	*ret_type = fh->handle_type;
	memcpy(uuid, h->uuid, sizeof(h->uuid));
	return (int)fh->handle_bytes;
}

static bool uuid_is_null(const uint8_t uuid[16])
{
	for (int i = 0; i < 16; i++)
		if (uuid[i])
			return false;
	return true;
}

int hostfs_decode_fh(struct vfs *fs, const uint8_t uuid[16], const void *buf, size_t len,
		     int type, struct vfs_entry *ret)
{
	struct hostfs *h = hostfs_of(fs);
	_cleanup_(freep) struct file_handle *fh = NULL;
	int fd;

	/* open_by_handle_at() wants CAP_DAC_READ_SEARCH and a real descriptor. */
	if (h->mount_fd < 0)
		return -EOPNOTSUPP;
	if (len == 0 || len > MAX_HANDLE_SZ)
		return -EINVAL;
	if (!uuid_is_null(uuid) && memcmp(uuid, h->uuid, sizeof(h->uuid)) != 0)
		return -ESTALE;
	fh = malloc(sizeof(*fh) + len);
	if (!fh)
		return -ENOMEM;
	fh->handle_bytes = (unsigned)len;
	fh->handle_type = type;
	memcpy(fh->f_handle, buf, len);
	fd = open_by_handle_at(h->mount_fd, fh, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESTALE : -errno;
	return hostfs_inode_of_fd(h, &fd, ret);
}
