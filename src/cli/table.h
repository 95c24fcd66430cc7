/*
 * table.h - every record a command prints goes through here: one table of
 * named columns, printed aligned for people (libsmartcols, the library
 * behind lsblk and findmnt, so columns never misalign whatever the data) or
 * as JSON with --json ({"NAME": [{"col": value, ...}, ...]}). A line may
 * have child lines (a volume's members): a tree on a terminal, a nested
 * "children" array in JSON.
 */
#ifndef PONY_CLI_TABLE_H
#define PONY_CLI_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cli_table;
struct cli_table_line;

enum {
	CLI_COL_RIGHT = 1 << 0,  /* right-aligned (numbers) */
	CLI_COL_NUMBER = 1 << 1, /* a JSON number, not a string (implies RIGHT) */
	CLI_COL_BOOL = 1 << 2,   /* a JSON true/false */
	CLI_COL_TREE = 1 << 3,   /* drawn as the tree of parent and child lines */
	CLI_COL_WRAP = 1 << 4,   /* long text (paths) wraps instead of widening the table */
	CLI_COL_ARRAY = 1 << 5,  /* values one a line in the cell; a JSON array of strings
				  * (of numbers with CLI_COL_NUMBER) */
};

/* A table whose JSON array is called name; with json, print() writes JSON. */
struct cli_table *cli_table_new(const char *name, bool json);
/* Adds a column; columns are numbered from 0 in the order added. */
void cli_table_column(struct cli_table *t, const char *name, unsigned flags);
/* Without headings (a listing meant for scripts that read columns). */
void cli_table_no_headings(struct cli_table *t);
/* A new line, a child of parent when parent is not NULL. */
struct cli_table_line *cli_table_line(struct cli_table *t, struct cli_table_line *parent);
/* Cell col of a line: printf-formatted text; NULL text prints empty (JSON null). */
void cli_table_set(struct cli_table_line *l, int col, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void cli_table_set_u64(struct cli_table_line *l, int col, uint64_t value);
void cli_table_set_bool(struct cli_table_line *l, int col, bool value);
/* Prints the table to stdout and frees it: 0, or CLI_EXIT_FAILURE after a message. */
int cli_table_print(struct cli_table *t);
/* Frees a table not printed (an error came first). NULL: does nothing. */
void cli_table_free(struct cli_table *t);
/*
 * Several tables printed as one output: for people one after another, a
 * blank line between; as JSON one object holding each table's array,
 * {"volume": [...], "members": [...]} (a command whose output is a record
 * and the table of its parts). All are printed with the first one's json
 * setting and freed: 0, or CLI_EXIT_FAILURE after a message.
 */
int cli_tables_print(struct cli_table *const *tables, size_t n);

/*
 * One record (a device, a scan's totals, a key's state), as lsblk and
 * findmnt print one row: for people a table of two columns, FIELD and
 * VALUE, a line a field in the order set; with json one object,
 * {"NAME": [{"field": value, ...}]}, its keys the field names in lower
 * case (libsmartcols's rule). A NULL fmt: JSON null, no line for people.
 */
struct cli_record;
struct cli_record *cli_record_new(const char *name, bool json);
/* flags: CLI_COL_NUMBER, CLI_COL_BOOL (the value's JSON type). */
void cli_record_set(struct cli_record *r, const char *field, unsigned flags, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void cli_record_set_u64(struct cli_record *r, const char *field, uint64_t value);
void cli_record_set_bool(struct cli_record *r, const char *field, bool value);
/* A field of several values: a line each for people, a JSON array. */
void cli_record_set_list(struct cli_record *r, const char *field, const char *const *values,
			 size_t n);
/* Prints and frees the record: 0, or CLI_EXIT_FAILURE after a message. */
int cli_record_print(struct cli_record *r);
/* The record as the table it is (for cli_tables_print); frees the rest of r. */
struct cli_table *cli_record_table(struct cli_record *r);
/* Frees a record not printed. NULL: does nothing. */
void cli_record_free(struct cli_record *r);

#endif
