/*
 * table.c - tables and their JSON through libsmartcols (table.h). A thin
 * layer: it keeps pony's commands to one small API and turns allocation
 * failures, which libsmartcols reports on every call, into one check at
 * print time instead of one after each cell. A record (one device, one
 * scan's totals) is a table too: a FIELD VALUE line per field for people,
 * one row whose columns are the fields in JSON, so both come from
 * libsmartcols and --json is the same shape as every other table's.
 * Several tables (a record and the tables of its parts) print as one
 * output, one JSON object (cli_tables_print).
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
	if (flags & CLI_COL_ARRAY) {
		/* One value a line; libsmartcols splits the cell at '\n' into a
		 * JSON array only through a wrap function (lsblk's MOUNTPOINTS). */
		scols_column_set_json_type(cl, flags & CLI_COL_NUMBER ? SCOLS_JSON_ARRAY_NUMBER
								     : SCOLS_JSON_ARRAY_STRING);
		scols_column_set_flags(cl, scols_flags | SCOLS_FL_WRAP);
		scols_column_set_wrapfunc(cl, scols_wrapnl_chunksize, scols_wrapnl_nextchunk, NULL);
	} else if (flags & CLI_COL_NUMBER) {
		scols_column_set_json_type(cl, SCOLS_JSON_NUMBER);
	} else if (flags & CLI_COL_BOOL) {
		scols_column_set_json_type(cl, SCOLS_JSON_BOOLEAN);
	}
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

static void table_vset(struct cli_table_line *l, int col, const char *fmt, va_list ap)
{
	char *text = NULL;

	if (!fmt)
		return;
	if (vasprintf(&text, fmt, ap) < 0)
		text = NULL;
	if (!text && l)
		((struct cli_table *)scols_line_get_userdata(scols_line_of(l)))->failed = true;
	else
		set_text(l, col, text);
}

void cli_table_set(struct cli_table_line *l, int col, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	table_vset(l, col, fmt, ap);
	va_end(ap);
}

void cli_table_set_u64(struct cli_table_line *l, int col, uint64_t value)
{
	cli_table_set(l, col, "%" PRIu64, value);
}

void cli_table_set_bool(struct cli_table_line *l, int col, bool value)
{
	struct cli_table *t = l ? scols_line_get_userdata(scols_line_of(l)) : NULL;

	/* libsmartcols's JSON takes any text but "0" (or "N...") for true. */
	if (t && scols_table_is_json(t->tb))
		cli_table_set(l, col, "%d", value);
	else
		cli_table_set(l, col, "%s", value ? "true" : "false");
}

/*
 * libsmartcols pads every cell but the last to its column's width, and
 * writes the separator before an empty last cell: a line whose last cells
 * are empty ends in blanks. Printed to a string first, each line is cut
 * where its text ends. JSON is printed as it is (its lines end in text).
 */
static int print_trimmed(struct libscols_table *tb)
{
	char *text = NULL, *line, *next;

	if (scols_table_is_json(tb))
		return scols_print_table(tb) ? -1 : 0;
	if (scols_print_table_to_string(tb, &text) || !text)
		return -1;
	for (line = text; *line; line = next) {
		size_t len;

		next = strchrnul(line, '\n');
		len = (size_t)(next - line);
		while (len && line[len - 1] == ' ')
			len--;
		fwrite(line, 1, len, stdout);
		putchar('\n');         /* the string has none after its last line */
		if (*next)
			next++;
	}
	free(text);
	return ferror(stdout) ? -1 : 0;
}

void cli_table_free(struct cli_table *t)
{
	if (!t)
		return;
	scols_unref_table(t->tb);
	free(t);
}

int cli_table_print(struct cli_table *t)
{
	int r = 0;

	if (!t)
		return cli_error("out of memory building a table");
	if (t->failed)
		r = cli_error("out of memory building a table");
	else if (print_trimmed(t->tb) < 0)
		r = cli_error("cannot print a table: %s", strerror(errno));
	cli_table_free(t);
	return r;
}

/*
 * One table's JSON without its enclosing object: libsmartcols prints
 * {"name": [...]} and the "name": [...] inside is what joins the others'.
 */
static int json_members(struct libscols_table *tb, FILE *out, bool first)
{
	char *text = NULL, *open, *close;
	int r = -1;

	if (scols_print_table_to_string(tb, &text) || !text)
		return -1;
	open = strchr(text, '{');
	close = strrchr(text, '}');
	if (open && close && close > open) {
		open++;
		while (*open == '\n')
			open++;
		while (close > open && (close[-1] == '\n' || close[-1] == ' '))
			close--;
		fprintf(out, "%s%.*s", first ? "" : ",\n", (int)(close - open), open);
		r = 0;
	}
	free(text);
	return r;
}

int cli_tables_print(struct cli_table *const *tables, size_t n)
{
	bool json = n && tables[0] && scols_table_is_json(tables[0]->tb);
	int r = 0;

	for (size_t i = 0; i < n; i++)
		if (!tables[i] || tables[i]->failed)
			r = cli_error("out of memory building a table");
	if (json && !r)
		fputs("{\n", stdout);
	for (size_t i = 0; i < n && !r; i++) {
		scols_table_enable_json(tables[i]->tb, json);
		if (json ? json_members(tables[i]->tb, stdout, i == 0) < 0
			 : (i && putchar('\n') == EOF) || print_trimmed(tables[i]->tb) < 0)
			r = cli_error("cannot print a table: %s", strerror(errno));
	}
	if (json && !r && (fputs("\n}\n", stdout) == EOF || ferror(stdout)))
		r = cli_error("cannot print a table: %s", strerror(errno));
	for (size_t i = 0; i < n; i++)
		cli_table_free(tables[i]);
	return r;
}

struct cli_record {
	struct cli_table *t;
	struct cli_table_line *row;     /* JSON: the one row; people: NULL */
	int ncols;                      /* JSON: fields (columns) so far */
};

struct cli_record *cli_record_new(const char *name, bool json)
{
	struct cli_record *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->t = cli_table_new(name, json);
	if (!r->t) {
		free(r);
		return NULL;
	}
	if (json) {
		r->row = cli_table_line(r->t, NULL);
	} else {
		cli_table_column(r->t, "FIELD", 0);
		cli_table_column(r->t, "VALUE", 0);
	}
	return r;
}

/* Where field's value goes: a new column of the JSON row, or a new line. */
static struct cli_table_line *record_cell(struct cli_record *r, const char *field,
					  unsigned flags, int *ret_col)
{
	struct cli_table_line *l;

	if (r->row) {
		cli_table_column(r->t, field, flags);
		*ret_col = r->ncols++;
		return r->row;
	}
	l = cli_table_line(r->t, NULL);
	cli_table_set(l, 0, "%s", field);
	*ret_col = 1;
	return l;
}

void cli_record_set(struct cli_record *r, const char *field, unsigned flags, const char *fmt, ...)
{
	struct cli_table_line *l;
	va_list ap;
	int col;

	if (!r || (!fmt && !r->row))
		return;         /* people: a field without a value has no line */
	l = record_cell(r, field, flags, &col);
	va_start(ap, fmt);
	table_vset(l, col, fmt, ap);
	va_end(ap);
}

void cli_record_set_u64(struct cli_record *r, const char *field, uint64_t value)
{
	cli_record_set(r, field, CLI_COL_NUMBER, "%" PRIu64, value);
}

void cli_record_set_bool(struct cli_record *r, const char *field, bool value)
{
	struct cli_table_line *l;
	int col;

	if (!r)
		return;
	l = record_cell(r, field, CLI_COL_BOOL, &col);
	cli_table_set_bool(l, col, value);
}

void cli_record_set_list(struct cli_record *r, const char *field, const char *const *values,
			 size_t n)
{
	struct cli_table_line *l;
	size_t len = 0;
	char *text;
	int col;

	if (!r)
		return;
	if (!r->row) {          /* people: the field on each of its lines */
		for (size_t i = 0; i < n; i++)
			cli_record_set(r, field, 0, "%s", values[i]);
		return;
	}
	for (size_t i = 0; i < n; i++)
		len += strlen(values[i]) + 1;
	l = record_cell(r, field, CLI_COL_ARRAY, &col);
	if (!n)
		return;         /* an empty cell: libsmartcols's [] */
	text = malloc(len);
	if (!text) {
		r->t->failed = true;
		return;
	}
	len = 0;
	for (size_t i = 0; i < n; i++)
		len += (size_t)sprintf(text + len, "%s%s", i ? "\n" : "", values[i]);
	set_text(l, col, text);
}

int cli_record_print(struct cli_record *r)
{
	/* NULL (r's allocation failed): cli_table_print says so */
	return cli_table_print(cli_record_table(r));
}

struct cli_table *cli_record_table(struct cli_record *r)
{
	struct cli_table *t;

	if (!r)
		return NULL;
	t = r->t;
	free(r);
	return t;
}

void cli_record_free(struct cli_record *r)
{
	if (!r)
		return;
	cli_table_free(r->t);
	free(r);
}
