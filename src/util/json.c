/*
 * json.c - a streaming JSON writer for the CLI's --json output. It keeps one
 * "needs a comma" bit per nesting level, so callers emit values in order and
 * never think about separators or escaping.
 */
#include <inttypes.h>
#include <math.h>

#include "pony/util.h"

void util_json_init(struct util_json *j, FILE *out)
{
	*j = (struct util_json){ .out = out };
}

static void json_escape(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", out); break;
		case '\\': fputs("\\\\", out); break;
		case '\n': fputs("\\n", out); break;
		case '\t': fputs("\\t", out); break;
		case '\r': fputs("\\r", out); break;
		default:
			if (*p < 0x20)
				fprintf(out, "\\u%04x", *p);
			else
				fputc(*p, out);
		}
	}
	fputc('"', out);
}

/* Separator and key before a value at the current depth. */
static void json_key(struct util_json *j, const char *key)
{
	if (j->need_comma[j->depth])
		fputc(',', j->out);
	j->need_comma[j->depth] = true;
	if (key) {
		json_escape(j->out, key);
		fputc(':', j->out);
	}
}

static void json_open(struct util_json *j, const char *key, char c)
{
	json_key(j, key);
	fputc(c, j->out);
	if (j->depth + 1 < (int)ARRAY_SIZE(j->need_comma))
		j->depth++;
	j->need_comma[j->depth] = false;
}

static void json_close(struct util_json *j, char c)
{
	fputc(c, j->out);
	if (j->depth > 0)
		j->depth--;
}

void util_json_object_begin(struct util_json *j, const char *key) { json_open(j, key, '{'); }
void util_json_object_end(struct util_json *j) { json_close(j, '}'); }
void util_json_array_begin(struct util_json *j, const char *key) { json_open(j, key, '['); }
void util_json_array_end(struct util_json *j) { json_close(j, ']'); }

void util_json_string(struct util_json *j, const char *key, const char *value)
{
	json_key(j, key);
	if (value)
		json_escape(j->out, value);
	else
		fputs("null", j->out);
}

void util_json_int(struct util_json *j, const char *key, int64_t value)
{
	json_key(j, key);
	fprintf(j->out, "%" PRId64, value);
}

void util_json_uint(struct util_json *j, const char *key, uint64_t value)
{
	json_key(j, key);
	fprintf(j->out, "%" PRIu64, value);
}

void util_json_double(struct util_json *j, const char *key, double value)
{
	json_key(j, key);
	if (isfinite(value))
		fprintf(j->out, "%.6g", value);
	else
		fputs("null", j->out);
}

void util_json_bool(struct util_json *j, const char *key, bool value)
{
	json_key(j, key);
	fputs(value ? "true" : "false", j->out);
}

void util_json_end(struct util_json *j)
{
	fputc('\n', j->out);
	fflush(j->out);
}
