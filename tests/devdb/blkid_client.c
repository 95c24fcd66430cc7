/*
 * blkid_client.c - a plain libblkid program for blkid_preload.sh: resolves
 * its argument with blkid_evaluate_spec(), blkid_evaluate_tag() and
 * blkid_get_devname() and prints the three answers, one a line ("-" for
 * none), as any libblkid user (mount, fsck, systemd) would ask.
 */
#include <blkid/blkid.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	blkid_cache cache = NULL;
	char *a, *b, *c, *eq, name[256];

	if (argc != 2 || !(eq = strchr(argv[1], '=')) || (size_t)(eq - argv[1]) >= sizeof(name)) {
		fprintf(stderr, "usage: blkid_client NAME=VALUE\n");
		return 2;
	}
	memcpy(name, argv[1], (size_t)(eq - argv[1]));
	name[eq - argv[1]] = '\0';
	a = blkid_evaluate_spec(argv[1], NULL);
	b = blkid_evaluate_tag(name, eq + 1, NULL);
	if (blkid_get_cache(&cache, "/dev/null") == 0) {
		c = blkid_get_devname(cache, name, eq + 1);
		blkid_put_cache(cache);
	} else {
		c = NULL;
	}
	printf("%s\n%s\n%s\n", a ? a : "-", b ? b : "-", c ? c : "-");
	free(a);
	free(b);
	free(c);
	return 0;
}
