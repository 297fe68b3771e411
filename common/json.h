/* SPDX-License-Identifier: MIT */
#ifndef COMMON_JSON_H
#define COMMON_JSON_H

/*
 * A strict JSON reader (RFC 8259) into an immutable tree, and the
 * canonical text of a value. Pure: allocates, no I/O.
 *
 * A document is refused, with the offset and the reason in err, when it
 * is not exactly one JSON value with optional whitespace around it: a
 * leading byte order mark, trailing bytes, invalid UTF-8 (overlong forms,
 * encoded surrogates, code points past U+10FFFF), a raw control
 * character in a string, an escape RFC 8259 does not list, a \u escape
 * that is a lone surrogate, a number with a leading zero, a '+' sign,
 * no digit around its '.' or in its exponent, an object that names a
 * member twice (compared after unescaping: "a" and "\u0061" are the
 * same name), nesting deeper than JSON_DEPTH_MAX arrays and objects, or
 * more than JSON_SIZE_MAX bytes.
 *
 * An object's members are kept in name order (bytewise on their UTF-8
 * text, a shorter name first when it is a prefix of a longer one): that
 * is the order json_index() gives and json_write() writes.
 */

#include <stddef.h>

#define JSON_DEPTH_MAX	64		/* arrays and objects, nested */
#define JSON_SIZE_MAX	(1024 * 1024)	/* bytes of a document */
#define JSON_PATH_MAX	256		/* bytes of a path's member name */

enum json_type {
	JSON_NULL,
	JSON_BOOL,
	JSON_NUMBER,
	JSON_STRING,
	JSON_ARRAY,
	JSON_OBJECT,
};

struct json;		/* a document */
struct json_value;	/* a value in one, valid while it is */


/* The four hex digits of a \u escape at p (not past end) as *v: 0, or
 * -1 when they are not four hex digits. */
int		 json_hex4(const char *p, const char *end, unsigned *v);
/* Code point cp as UTF-8 at out (room for 4): its length. */
size_t		 json_put_utf8(char *out, unsigned cp);

/* The document in text[0..len), or NULL with why in err. */
struct json	*json_parse(const char *text, size_t len, char *err,
		    size_t errlen);
void		 json_free(struct json **doc);
const struct json_value *json_root(const struct json *doc);

enum json_type	 json_type(const struct json_value *v);
/* Elements of an array or members of an object; 0 for the rest. */
size_t		 json_len(const struct json_value *v);
/* The i-th element of an array, or member of an object (in name order:
 * its name in *name, *namelen when they are not NULL). NULL past the
 * end or for a scalar. */
const struct json_value *json_index(const struct json_value *v, size_t i,
		    const char **name, size_t *namelen);
/* The member of object obj named name[0..namelen), or NULL. */
const struct json_value *json_member(const struct json_value *obj,
		    const char *name, size_t namelen);

/*
 * The value at path below obj, or NULL when a step is missing or not an
 * object (or path is not valid). A path is member names joined by '.':
 * "app_metadata.role" is obj's app_metadata's role. In a name, "\." is a
 * '.' and "\\" a '\': "a\.b" is the one member named "a.b". A valid path
 * has at least one name, no empty name and no other '\', and no name of
 * more than JSON_PATH_MAX bytes.
 */
const struct json_value *json_path(const struct json_value *obj,
		    const char *path);
int		 json_path_valid(const char *path);

/* A string's decoded bytes (NUL-terminated, but a "\u0000" in it is a
 * NUL too: *len counts them all), or NULL if v is not a string. */
const char	*json_get_string(const struct json_value *v, size_t *len);
/* A number as a double (strtod in the C locale). 0, or -1 when v is not
 * a number or is out of a double's range. */
int		 json_get_number(const struct json_value *v, double *out);
/* true or false as 1 or 0. 0, or -1 when v is neither. */
int		 json_get_bool(const struct json_value *v, int *out);

/*
 * The canonical text of v: no whitespace, an object's members in name
 * order, a number in one form for its value however the document wrote
 * it (1, 1.0, 1e0 and 10E-1 are "1", -0 is "0", 1.5 is "15e-1"; exact,
 * never through a double), strings with '"' and '\'
 * escaped as \" and \\, \b \f \n \r \t for those controls, every other
 * control as \u00XX (lower-case hex), and every other character as its
 * UTF-8 bytes. Two values with the same text are the same value.
 * Writes at most outlen bytes with a NUL (when outlen > 0) to out and
 * returns the text's length, as snprintf does.
 */
size_t		 json_write(const struct json_value *v, char *out,
		    size_t outlen);

#endif
