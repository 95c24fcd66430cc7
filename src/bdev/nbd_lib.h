/*
 * nbd_lib.h - libnbd's functions, loaded on the first NBD device opened
 * (nbd_lib.c) rather than linked: libnbd brings GnuTLS, libxml2, ICU and
 * libstdc++ with it, whose loading and relocation cost every pony command
 * about 15 ms of CPU at start (perf stat of a program linked with libnbd
 * and doing nothing against one without), though most never open an NBD
 * member. nbd.c includes this after <libnbd.h> and calls libnbd's
 * functions by their own names, which the macros below send through the
 * table; nbd_lib_load() must have succeeded before any of them is called.
 */
#ifndef PONY_BDEV_NBD_LIB_H
#define PONY_BDEV_NBD_LIB_H

#include <stddef.h>

#include <libnbd.h>

/* X(name) for each libnbd function nbd.c calls, name without "nbd_". */
#define NBD_LIB_FUNCTIONS(X) \
	X(aio_connect_uri) X(aio_disconnect) X(aio_flush) X(aio_get_direction) \
	X(aio_get_fd) X(aio_is_closed) X(aio_is_dead) X(aio_is_ready) \
	X(aio_notify_read) X(aio_notify_write) X(aio_pread) X(aio_pwrite) \
	X(aio_trim) X(can_flush) X(can_fua) X(can_multi_conn) X(can_trim) \
	X(close) X(create) X(get_block_size) X(get_errno) X(get_error) \
	X(get_size) X(is_read_only) X(poll) X(set_uri_allow_local_file)

struct nbd_lib {
#define NBD_LIB_POINTER(name) __typeof__(nbd_##name) *name;
	NBD_LIB_FUNCTIONS(NBD_LIB_POINTER)
#undef NBD_LIB_POINTER
};

extern struct nbd_lib nbd_lib;

/* Loads libnbd once: 0, or -ENOSYS with why (a sentence) filled in. */
int nbd_lib_load(char *why, size_t why_size);

#ifndef NBD_LIB_NO_REDIRECT
#define nbd_aio_connect_uri (nbd_lib.aio_connect_uri)
#define nbd_aio_disconnect (nbd_lib.aio_disconnect)
#define nbd_aio_flush (nbd_lib.aio_flush)
#define nbd_aio_get_direction (nbd_lib.aio_get_direction)
#define nbd_aio_get_fd (nbd_lib.aio_get_fd)
#define nbd_aio_is_closed (nbd_lib.aio_is_closed)
#define nbd_aio_is_dead (nbd_lib.aio_is_dead)
#define nbd_aio_is_ready (nbd_lib.aio_is_ready)
#define nbd_aio_notify_read (nbd_lib.aio_notify_read)
#define nbd_aio_notify_write (nbd_lib.aio_notify_write)
#define nbd_aio_pread (nbd_lib.aio_pread)
#define nbd_aio_pwrite (nbd_lib.aio_pwrite)
#define nbd_aio_trim (nbd_lib.aio_trim)
#define nbd_can_flush (nbd_lib.can_flush)
#define nbd_can_fua (nbd_lib.can_fua)
#define nbd_can_multi_conn (nbd_lib.can_multi_conn)
#define nbd_can_trim (nbd_lib.can_trim)
#define nbd_close (nbd_lib.close)
#define nbd_create (nbd_lib.create)
#define nbd_get_block_size (nbd_lib.get_block_size)
#define nbd_get_errno (nbd_lib.get_errno)
#define nbd_get_error (nbd_lib.get_error)
#define nbd_get_size (nbd_lib.get_size)
#define nbd_is_read_only (nbd_lib.is_read_only)
#define nbd_poll (nbd_lib.poll)
#define nbd_set_uri_allow_local_file (nbd_lib.set_uri_allow_local_file)
#endif

#endif
