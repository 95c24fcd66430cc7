/*
 * uevent.c - block device events for `pony dev watch`, from whichever side
 * of the kernel's NETLINK_KOBJECT_UEVENT socket has them. With udevd
 * running (its control socket /run/udev/control exists), udev's processed
 * events through libudev, as before; without it (containers, early boot,
 * this machine) the kernel's own broadcast (group 1), parsed here: a
 * losetup, a new disk or a detach is seen either way.
 *
 * libudev is loaded on first use with dlopen(), not linked: every pony
 * process (a `pony dev find` is a whole process) would otherwise pay for
 * loading and relocating it, and only the watch needs it.
 */
#include <dlfcn.h>
#include <errno.h>
#include <linux/netlink.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pony/devdb.h"
#include "pony/util.h"

#define UEVENT_KERNEL_GROUP 1u
#define UEVENT_BUF 8192

struct udev;
struct udev_monitor;
struct udev_device;

/* The few libudev calls the watch makes, resolved from libudev.so.1. */
struct udev_api {
	void *so;
	struct udev *(*new_)(void);
	struct udev *(*unref)(struct udev *u);
	struct udev_monitor *(*monitor_new)(struct udev *u, const char *name);
	int (*monitor_filter)(struct udev_monitor *m, const char *subsystem, const char *devtype);
	int (*monitor_enable)(struct udev_monitor *m);
	int (*monitor_fd)(struct udev_monitor *m);
	struct udev_monitor *(*monitor_unref)(struct udev_monitor *m);
	struct udev_device *(*receive)(struct udev_monitor *m);
	const char *(*devnode)(struct udev_device *d);
	const char *(*action)(struct udev_device *d);
	struct udev_device *(*device_unref)(struct udev_device *d);
};

struct devdb_uevents {
	enum devdb_uevent_source source;
	int fd;                         /* the kernel socket, or the monitor's */
	struct udev_api api;
	struct udev *udev;
	struct udev_monitor *mon;
};

static int udev_api_load(struct udev_api *a)
{
	static const struct {
		const char *name;
		size_t off;
	} syms[] = {
#define SYM(field, name) { name, offsetof(struct udev_api, field) }
		SYM(new_, "udev_new"), SYM(unref, "udev_unref"),
		SYM(monitor_new, "udev_monitor_new_from_netlink"),
		SYM(monitor_filter, "udev_monitor_filter_add_match_subsystem_devtype"),
		SYM(monitor_enable, "udev_monitor_enable_receiving"),
		SYM(monitor_fd, "udev_monitor_get_fd"), SYM(monitor_unref, "udev_monitor_unref"),
		SYM(receive, "udev_monitor_receive_device"), SYM(devnode, "udev_device_get_devnode"),
		SYM(action, "udev_device_get_action"), SYM(device_unref, "udev_device_unref"),
#undef SYM
	};

	a->so = dlopen("libudev.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!a->so)
		return -ENOENT;
	for (size_t i = 0; i < ARRAY_SIZE(syms); i++) {
		void *f = dlsym(a->so, syms[i].name);

		if (!f)
			return -ENOSYS;
		memcpy((char *)a + syms[i].off, &f, sizeof(f));
	}
	return 0;
}

static int open_udev(struct devdb_uevents *ev)
{
	struct udev_api *a = &ev->api;
	int r = udev_api_load(a);

	if (r < 0)
		return r;
	ev->udev = a->new_();
	ev->mon = ev->udev ? a->monitor_new(ev->udev, "udev") : NULL;
	if (!ev->mon)
		return -ENOMEM;
	if (a->monitor_filter(ev->mon, "block", NULL) < 0 || a->monitor_enable(ev->mon) < 0)
		return -EIO;
	ev->fd = a->monitor_fd(ev->mon);
	return 0;
}

static int open_kernel(struct devdb_uevents *ev)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = UEVENT_KERNEL_GROUP };
	int one = 1;

	ev->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_KOBJECT_UEVENT);
	if (ev->fd < 0)
		return -errno;
	/* a burst of events (a disk with many partitions) must not be lost */
	(void)setsockopt(ev->fd, SOL_SOCKET, SO_RCVBUFFORCE, &(int){ 1 << 20 }, sizeof(int));
	if (setsockopt(ev->fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) < 0 ||
	    bind(ev->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	return 0;
}

void devdb_uevents_free(struct devdb_uevents *ev)
{
	if (!ev)
		return;
	if (ev->source == DEVDB_UEVENT_UDEV) {
		if (ev->mon)
			ev->api.monitor_unref(ev->mon);
		if (ev->udev)
			ev->api.unref(ev->udev);
	} else if (ev->fd >= 0) {
		close(ev->fd);
	}
	if (ev->api.so)
		dlclose(ev->api.so);
	free(ev);
}

int devdb_uevents_open(enum devdb_uevent_source source, struct devdb_uevents **ret)
{
	_cleanup_(devdb_uevents_freep) struct devdb_uevents *ev = calloc(1, sizeof(*ev));
	int r;

	if (!ev)
		return -ENOMEM;
	ev->fd = -1;
	if (source == DEVDB_UEVENT_AUTO)
		source = access("/run/udev/control", F_OK) == 0 ? DEVDB_UEVENT_UDEV
								 : DEVDB_UEVENT_KERNEL;
	ev->source = source;
	r = source == DEVDB_UEVENT_UDEV ? open_udev(ev) : open_kernel(ev);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(ev);
	return 0;
}

int devdb_uevents_fd(const struct devdb_uevents *ev)
{
	return ev->fd;
}

enum devdb_uevent_source devdb_uevents_source(const struct devdb_uevents *ev)
{
	return ev->source;
}

static int copy_out(const char *s, char *buf, size_t len)
{
	return snprintf(buf, len, "%s", s) < (int)len ? 1 : -ENAMETOOLONG;
}

static int receive_udev(struct devdb_uevents *ev, struct devdb_uevent *out)
{
	struct udev_device *dev = ev->api.receive(ev->mon);
	const char *node, *action;
	int r = 0;

	if (!dev)
		return 0;
	node = ev->api.devnode(dev);
	action = ev->api.action(dev);
	if (node) {
		r = copy_out(action ? action : "change", out->action, sizeof(out->action));
		if (r > 0)
			r = copy_out(node, out->node, sizeof(out->node));
	}
	ev->api.device_unref(dev);
	return r;
}

/*
 * One kernel message: "ACTION@DEVPATH\0KEY=VALUE\0...", from the kernel
 * itself (sender port 0, uid 0), never from another process pretending.
 */
static int receive_kernel(struct devdb_uevents *ev, struct devdb_uevent *out)
{
	char buf[UEVENT_BUF + 1], ctl[CMSG_SPACE(sizeof(struct ucred))];
	struct sockaddr_nl sa;
	struct iovec iov = { .iov_base = buf, .iov_len = UEVENT_BUF };
	struct msghdr msg = { .msg_name = &sa, .msg_namelen = sizeof(sa), .msg_iov = &iov,
			      .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl) };
	const char *action = NULL, *subsystem = NULL, *devname = NULL;
	struct cmsghdr *c;
	ssize_t n = recvmsg(ev->fd, &msg, MSG_DONTWAIT);

	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	if (sa.nl_pid != 0 || (msg.msg_flags & MSG_TRUNC))
		return 0;
	c = CMSG_FIRSTHDR(&msg);
	if (!c || c->cmsg_type != SCM_CREDENTIALS || ((struct ucred *)CMSG_DATA(c))->uid != 0)
		return 0;
	buf[n] = '\0';
	for (char *p = buf + strlen(buf) + 1; p < buf + n; p += strlen(p) + 1) {
		if (!strncmp(p, "ACTION=", 7))
			action = p + 7;
		else if (!strncmp(p, "SUBSYSTEM=", 10))
			subsystem = p + 10;
		else if (!strncmp(p, "DEVNAME=", 8))
			devname = p + 8;
	}
	if (!action || !devname || !subsystem || strcmp(subsystem, "block"))
		return 0;
	if (copy_out(action, out->action, sizeof(out->action)) < 0)
		return -ENAMETOOLONG;
	return snprintf(out->node, sizeof(out->node), "%s%s", devname[0] == '/' ? "" : "/dev/",
			devname) < (int)sizeof(out->node) ? 1 : -ENAMETOOLONG;
}

int devdb_uevents_receive(struct devdb_uevents *ev, struct devdb_uevent *out)
{
	return ev->source == DEVDB_UEVENT_UDEV ? receive_udev(ev, out) : receive_kernel(ev, out);
}
