/*
 * table.c - tables and their JSON through libsmartcols (table.h). A thin
 * layer: it keeps pony's commands to one small API and turns allocation
 * failures, which libsmartcols reports on every call, into one check at
 * print time instead of one after each cell.
 */
#include <errno.h>
#include <inttypes.h>
#include <libsmartcols.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "table.h"

struct cli_table {
	struct libscols_table *tb;
	bool failed;    /* an allocation failed on the way: print() says so */
};

/* libsmartcols lines are ours as opaque pointers; each knows its table by a
 * user-data pointer so cells can record a failure. */
static struct libscols_line *scols_line_of(struct cli_table_line *l)
{
	return (struct libscols_line *)l;
}

struct cli_table *cli_table_new(const char *name, bool json)
{
	struct cli_table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->tb = scols_new_table();
	if (!t->tb) {
		free(t);
		return NULL;
	}
	if (scols_table_set_name(t->tb, name) || scols_table_enable_json(t->tb, json))
		t->failed = true;
	return t;
}

void cli_table_column(struct cli_table *t, const char *name, unsigned flags)
{
	int scols_flags = 0;
	struct libscols_column *cl;

	if (!t)
		return;
	if (flags & (CLI_COL_RIGHT | CLI_COL_NUMBER))
		scols_flags |= SCOLS_FL_RIGHT;
	if (flags & CLI_COL_TREE)
		scols_flags |= SCOLS_FL_TREE;
	if (flags & CLI_COL_WRAP)
		scols_flags |= SCOLS_FL_WRAP;
	cl = scols_table_new_column(t->tb, name, 0, scols_flags);
	if (!cl) {
		t->failed = true;
		return;
	}
	if (flags & CLI_COL_NUMBER)
		scols_column_set_json_type(cl, SCOLS_JSON_NUMBER);
	else if (flags & CLI_COL_BOOL)
		scols_column_set_json_type(cl, SCOLS_JSON_BOOLEAN);
}

void cli_table_no_headings(struct cli_table *t)
{
	if (t)
		scols_table_enable_noheadings(t->tb, 1);
}

struct cli_table_line *cli_table_line(struct cli_table *t, struct cli_table_line *parent)
{
	struct libscols_line *ln;

	if (!t)
		return NULL;
	ln = scols_table_new_line(t->tb, parent ? scols_line_of(parent) : NULL);
	if (!ln) {
		t->failed = true;
		return NULL;
	}
	scols_line_set_userdata(ln, t);
	return (struct cli_table_line *)ln;
}

static void set_text(struct cli_table_line *l, int col, char *text)
{
	struct cli_table *t;

	if (!l) {
		free(text);
		return;
	}
	t = scols_line_get_userdata(scols_line_of(l));
	/* refer_data takes the string: it is freed with the table. */
	if (scols_line_refer_data(scols_line_of(l), col, text)) {
		free(text);
		t->failed = true;
	}
}

void cli_table_set(struct cli_table_line *l, int col, const char *fmt, ...)
{
	char *text = NULL;
	va_list ap;

	if (!fmt)
		return;
	va_start(ap, fmt);
	if (vasprintf(&text, fmt, ap) < 0)
		text = NULL;
	va_end(ap);
	if (!text && l)
		((struct cli_table *)scols_line_get_userdata(scols_line_of(l)))->failed = true;
	else
		set_text(l, col, text);
}

void cli_table_set_u64(struct cli_table_line *l, int col, uint64_t value)
{
	cli_table_set(l, col, "%" PRIu64, value);
}

void cli_table_set_bool(struct cli_table_line *l, int col, bool value)
{
	cli_table_set(l, col, "%s", value ? "true" : "false");
}

int cli_table_print(struct cli_table *t)
{
	int r = 0;

	if (!t)
		return cli_error("out of memory building a table");
	if (t->failed)
		r = cli_error("out of memory building a table");
	else if (scols_print_table(t->tb))
		r = cli_error("cannot print a table: %s", strerror(errno));
	scols_unref_table(t->tb);
	free(t);
	return r;
}
