/*
 * mount_opts.c - mount(8)'s own options, which neither ponyfs nor the union
 * may pass to the kernel (mount_helper.h). A file of its own because both
 * mount helpers and pony-overlayfs need it, and pony-overlayfs links only
 * what the union's mount takes (overlayfs_main.c).
 */
#include <string.h>

#include "mount_helper.h"
#include "pony/util.h"

bool cli_mount_opt_is_bookkeeping(const char *o)
{
	static const char *const names[] = {
		"defaults", "auto", "noauto", "nofail", "_netdev", "user", "nouser",
		"users", "owner", "group", "loop", "nosymfollow",
	};

	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (!strcmp(o, names[i]))
			return true;
	return !strncmp(o, "x-", 2) || !strncmp(o, "X-", 2) || !strncmp(o, "comment=", 8);
}
