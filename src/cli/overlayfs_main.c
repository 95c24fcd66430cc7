/*
 * overlayfs_main.c - pony-overlayfs as a program of its own: fuse-overlayfs's
 * command line and options (cmd_union_opts.c) over pony's union. podman
 * starts one per layer stack it mounts, a dozen or more per image build, so
 * its start-up counts: linked from the CLI's archive it takes in the union,
 * the FUSE front end and what they call, not the rest of pony (libnbd with
 * GnuTLS and ICU, OpenSSL, SQLite), which `pony` loads at every start.
 */
#include "union_opts.h"

int main(int argc, char **argv)
{
	return cli_union_overlayfs_main(argc, argv);
}
