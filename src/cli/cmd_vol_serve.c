/*
 * cmd_vol_serve.c - `pony vol serve --nbd ADDR DEV...` serves a volume over
 * NBD: it runs nbdkit (in the foreground, in its place) with pony's plugin
 * (src/nbdkit), which assembles the volume from DEV... and serves it, so
 * any NBD client on any host uses it. ADDR is HOST:PORT, PORT, or a Unix
 * socket's path (anything with a '/'). The plugin is the one built beside
 * this binary, else the installed one (nbdkit finds "pony" in its plugin
 * directory); $PONY_NBDKIT_PLUGIN names another.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "vol.h"

/* argv: nbdkit, its options (up to 8), the plugin, 5 keys, members, NULL. */
#define SERVE_FIXED_ARGS 16

static void serve_usage(FILE *out)
{
	fprintf(out,
		"Usage: pony vol serve --nbd ADDR [OPTIONS] DEV...|NAME|UUID=U|LABEL=L\n"
		"Serves the volume whose members are DEV... (paths or NBD URIs) over NBD,\n"
		"through nbdkit and pony's plugin, until stopped (SIGINT/SIGTERM closes the\n"
		"volume clean). ADDR: HOST:PORT, PORT (every address), or a Unix socket's\n"
		"path (with a '/'). NBD clients see its size, flush, FUA, zero, multi-conn\n"
		"and the full stripe as preferred block size.\n\n"
		"      --nbd ADDR     where to listen (required)\n"
		"  -r, --read-only    serve it read-only; nothing is written to the members\n"
		"      --degraded     start with members absent\n"
		"      --auto-readd   a member on an NBD server that fails is re-added when its\n"
		"                     server answers again (docs/nbd.md)\n"
		"      --tls-psk FILE require TLS with the pre-shared keys in FILE (psktool's\n"
		"                     format: USER:HEXKEY lines); clients use nbds://USER@...\n"
		"  -h, --help         this help\n"
		"--member-timeout SECONDS is passed on for members on NBD servers.\n");
}

/* What vol_find_members() found (NULL: members were given). */
static void free_found(char **found, int n)
{
	for (int i = 0; found && i < n; i++)
		free(found[i]);
	free(found);
}

static const char *serve_plugin(void)
{
	const char *env = getenv("PONY_NBDKIT_PLUGIN");

	if (env && *env)
		return env;
	if (PONY_NBDKIT_PLUGIN[0] && access(PONY_NBDKIT_PLUGIN, R_OK) == 0)
		return PONY_NBDKIT_PLUGIN;
	return "pony";
}

/* ADDR into nbdkit's options: -U PATH, or [-i HOST] -p PORT. */
static int serve_addr(const char *addr, char **argv, int *argc, char *host, size_t hostsize)
{
	const char *colon = strrchr(addr, ':');
	const char *port = colon ? colon + 1 : addr;
	unsigned p;

	if (strchr(addr, '/')) {
		argv[(*argc)++] = "-U";
		argv[(*argc)++] = (char *)addr;
		return 0;
	}
	if (cli_parse_unsigned("pony vol serve", "--nbd", port, 1, 65535, &p))
		return CLI_EXIT_USAGE;
	if (colon && colon > addr) {
		snprintf(host, hostsize, "%.*s", (int)(colon - addr), addr);
		if (host[0] == '[' && host[strlen(host) - 1] == ']') {     /* [::1]:10809 */
			memmove(host, host + 1, strlen(host));
			host[strlen(host) - 1] = '\0';
		}
		argv[(*argc)++] = "-i";
		argv[(*argc)++] = host;
	}
	argv[(*argc)++] = "-p";
	argv[(*argc)++] = (char *)port;
	return 0;
}

static int vol_serve_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "nbd", required_argument, NULL, 'N' }, { "read-only", no_argument, NULL, 'r' },
		{ "degraded", no_argument, NULL, 'D' }, { "tls-psk", required_argument, NULL, 'T' },
		{ "auto-readd", no_argument, NULL, 'A' },
		{ "help", no_argument, NULL, 'h' }, { 0 },
	};
	const char *addr = NULL, *psk = NULL;
	bool rdonly = false, degraded = false, auto_readd = false;
	char host[256], tls_psk[4096], timeout[32];
	char **args, **members, **found = NULL;
	int c, n, k = 0, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "rh", longopts, NULL)) != -1) {
		switch (c) {
		case 'N': addr = optarg; break;
		case 'r': rdonly = true; break;
		case 'D': degraded = true; break;
		case 'A': auto_readd = true; break;
		case 'T': psk = optarg; break;
		case 'h': serve_usage(stdout); return CLI_EXIT_OK;
		default: serve_usage(stderr); return CLI_EXIT_USAGE;
		}
	}
	n = argc - optind;
	if (!addr)
		return cli_usage_error("pony vol serve", "--nbd ADDR is required");
	if (n < 1 || n > 64)
		return cli_usage_error("pony vol serve", "give 1 to 64 member devices");
	if (psk && access(psk, R_OK) < 0)
		return cli_error("--tls-psk %s: %s", psk, strerror(errno));
	members = argv + optind;
	/* NAME, UUID=, LABEL=: the members as devdb knows them (kept: exec takes them). */
	if (n == 1 && vol_is_named(members[0])) {
		r = vol_find_members(members[0], &found, &n);
		if (r)
			return r;
		members = found;
	}
	r = cli_paths_distinct(members, n);
	if (r) {
		free_found(found, n);
		return r;
	}
	args = calloc((size_t)(SERVE_FIXED_ARGS + n), sizeof(*args));
	if (!args)
		return cli_error("out of memory");
	args[k++] = "nbdkit";
	args[k++] = "-f";
	if (rdonly)
		args[k++] = "-r";
	r = serve_addr(addr, args, &k, host, sizeof(host));
	if (r) {
		free(args);
		free_found(found, n);
		return r;
	}
	if (psk) {
		snprintf(tls_psk, sizeof(tls_psk), "--tls-psk=%s", psk);
		args[k++] = "--tls=require";
		args[k++] = tls_psk;
	}
	args[k++] = (char *)serve_plugin();
	for (int i = 0; i < n; i++) {
		args[k] = NULL;
		if (asprintf(&args[k], "member=%s", members[i]) < 0 || !args[k])
			return cli_error("out of memory");
		k++;
	}
	if (rdonly)
		args[k++] = "readonly=true";
	if (degraded)
		args[k++] = "degraded=true";
	if (auto_readd)
		args[k++] = "auto-readd=true";
	if (cli_member_timeout_ms()) {
		snprintf(timeout, sizeof(timeout), "member-timeout=%.3f", cli_member_timeout_ms() / 1000.0);
		args[k++] = timeout;
	}
	args[k] = NULL;
	fflush(NULL);
	execvp("nbdkit", args);
	r = errno;
	free(args);     /* the member= strings go with the process */
	return cli_error("cannot run nbdkit: %s%s", strerror(r),
			 r == ENOENT ? " (install nbdkit: scripts/install-deps.sh)" : "");
}

const struct cli_command cli_vol_serve = {
	"serve", "serve the volume over NBD (nbdkit with pony's plugin)", vol_serve_run };
