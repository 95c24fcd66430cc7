/*
 * union_fixture.c - the shared fixture of the union's unit tests
 * (union_fixture.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <cmocka.h>

#include "pony/union.h"
#include "pony/util.h"
#include "union_fixture.h"

void sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	assert_int_equal(system(cmd), 0);
}

void sh_output(char *out, size_t size, const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	FILE *p;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_non_null(fgets(out, (int)size, p));
	pclose(p);
}

void lower_sum(struct fixture *f, char *out)
{
	sh_output(out, 64, "cd %s && (find . -printf '%%p %%y %%m %%s %%T@ %%C@\\n' | "
		  "sort; find . -type f -exec cat {} +) | md5sum", f->lower);
}

int build(struct fixture *f)
{
	const char *lowers[] = { f->lower };
	struct union_config cfg = { .lowers = lowers, .nlowers = 1, .upper = f->upper,
				    .work = f->work,
				    .flags = geteuid() ? UNION_USERXATTR : 0 };

	return union_new(&cfg, &f->fs);
}

int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	umask(0);
	strcpy(f->top, "/tmp/pony-union-XXXXXX");
	assert_non_null(mkdtemp(f->top));
	snprintf(f->lower, sizeof(f->lower), "%s/lower", f->top);
	snprintf(f->upper, sizeof(f->upper), "%s/upper", f->top);
	snprintf(f->work, sizeof(f->work), "%s/work", f->top);
	sh("cd %s && mkdir -p lower/d/sub lower/e upper work && echo data > lower/f && "
	   "chmod 640 lower/f && touch -d 2001-02-03 lower/f && echo x > lower/d/x && "
	   "echo y > lower/d/sub/y && ln lower/f lower/flink && ln -s f lower/sym && "
	   "for i in $(seq 1 40); do echo $i > lower/e/n$i; done", f->top);
	lower_sum(f, f->lower_sum);
	assert_int_equal(build(f), 0);
	vfs_ctx_self(&f->ctx);
	f->ctx.umask = 0;
	*state = f;
	return 0;
}

int teardown(void **state)
{
	struct fixture *f = *state;
	char sum[64];

	vfs_free(f->fs);
	lower_sum(f, sum);
	assert_string_equal(sum, f->lower_sum); /* the lower never changes */
	sh("rm -rf %s", f->top);
	free(f);
	return 0;
}

void remount(struct fixture *f)
{
	vfs_free(f->fs);
	f->fs = NULL;
	assert_int_equal(build(f), 0);
}

void walk(struct fixture *f, const char *path, struct vfs_entry *e)
{
	assert_int_equal(vfs_walk(f->fs, &f->ctx, path, e), 0);
}
