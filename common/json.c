/* SPDX-License-Identifier: MIT */
/*
 * A strict JSON reader (json.h): recursive descent over RFC 8259's
 * grammar into one array of values, strings decoded and number texts
 * copied into one arena, each container's children in one array of
 * pointers (an object's sorted by name, which finds a name given twice).
 *
 * Calls nothing of Corral.
 */

#include "common/json.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GROW_MIN	16	/* entries of a vector's first allocation */
#define HEX4_LEN	4	/* digits of a \u escape */
#define SURROGATE_HI	0xd800	/* RFC 8259 7: a pair's first, ... */
#define SURROGATE_LO	0xdc00	/* ... and its second */
#define SURROGATE_END	0xe000
#define SURROGATE_BASE	0x10000
#define SURROGATE_BITS	10
#define NUMBER_INT_DIGITS 21	/* digits of an integer written out whole */
#define NUMBER_EXP_MAX	1000000000LL	/* an exponent read as a value */
#define NUMBER_EXP_TEXT	32	/* bytes of "e" and an exponent */

struct json_value {
	enum json_type		 type;
	const char		*s;	/* a string's bytes, a number's text */
	size_t			 len;	/* of s; 0 or 1 for false or true */
	const char		*name;	/* a member's name */
	size_t			 namelen;
	const struct json_value	**kids;	/* an array's or object's */
	size_t			 n;	/* of kids */
	size_t			 first;	/* while parsing: kids in json.kidx */
};

struct json {
	struct json_value	*node;	/* node[0] is the root */
	size_t			 nnode, capnode;
	char			*arena;	/* strings and number texts */
	size_t			 used, cap;
	size_t			*kidx;	/* while parsing: children's nodes */
	size_t			 nkid, capkid;
	const struct json_value	**kid;	/* then: pointers to them */
};

struct parser {
	struct json	*doc;
	const char	*start, *p, *end;
	size_t		*stack;		/* children of the open containers */
	size_t		 top, cap;
	int		 depth;
	char		*err;
	size_t		 errlen;
};

static int value(struct parser *ps, size_t *idx);

static int
fail(struct parser *ps, const char *what)
{
	snprintf(ps->err, ps->errlen, "offset %zu: %s",
	    (size_t)(ps->p - ps->start), what);
	return -1;
}

/* Vector v (of *cap entries of size) with room for need of them, or
 * NULL (v is left as it was). */
static void *
grow(void *v, size_t *cap, size_t need, size_t size)
{
	size_t n = *cap > 0 ? *cap : GROW_MIN;
	void *p;

	if (need <= *cap)
		return v;
	while (n < need)
		n *= 2;
	if ((p = realloc(v, n * size)) == NULL)
		return NULL;
	*cap = n;
	return p;
}

static int
new_node(struct parser *ps, enum json_type type, size_t *idx)
{
	struct json *doc = ps->doc;
	struct json_value *node;

	if ((node = grow(doc->node, &doc->capnode, doc->nnode + 1,
	    sizeof(*doc->node))) == NULL)
		return fail(ps, "out of memory");
	doc->node = node;
	*idx = doc->nnode++;
	memset(&doc->node[*idx], 0, sizeof(doc->node[*idx]));
	doc->node[*idx].type = type;
	return 0;
}

static void
skip_ws(struct parser *ps)
{
	while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' ||
	    *ps->p == '\n' || *ps->p == '\r'))
		ps->p++;
}

/* The length of the one valid UTF-8 character at p (RFC 3629 4), or 0. */
static size_t
utf8_len(const unsigned char *p, const unsigned char *end)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4;
	else
		return 0;
	if (p[0] == 0xe0)
		lo = 0xa0;	/* overlong */
	else if (p[0] == 0xed)
		hi = 0x9f;	/* a surrogate */
	else if (p[0] == 0xf0)
		lo = 0x90;	/* overlong */
	else if (p[0] == 0xf4)
		hi = 0x8f;	/* past U+10FFFF */
	if ((size_t)(end - p) < n || p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	return n;
}

int
json_hex4(const char *p, const char *end, unsigned *v)
{
	*v = 0;
	if (end - p < HEX4_LEN)
		return -1;
	for (int i = 0; i < HEX4_LEN; i++) {
		char c = p[i];
		unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0') :
		    c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10) :
		    c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10) : 16;

		if (d == 16)
			return -1;
		*v = *v << 4 | d;
	}
	return 0;
}

size_t
json_put_utf8(char *out, unsigned cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | cp >> 12);
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | cp >> 18);
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* The escape at ps->p (its '\'), decoded to out; *w its length. */
static int
escape_at(struct parser *ps, char *out, size_t *w)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *p = ps->p + 1, *at;
	unsigned cp, lo;

	if (p >= ps->end)
		return fail(ps, "an unterminated string");
	if (*p != 'u') {
		if (*p == '\0' || (at = strchr(from, *p)) == NULL)
			return fail(ps, "an invalid escape");
		*out = to[at - from];
		*w = 1;
		ps->p = p + 1;
		return 0;
	}
	if (json_hex4(p + 1, ps->end, &cp) == -1)
		return fail(ps, "an invalid \\u escape");
	p += 1 + HEX4_LEN;
	if (cp >= SURROGATE_LO && cp < SURROGATE_END)
		return fail(ps, "a lone low surrogate");
	if (cp >= SURROGATE_HI && cp < SURROGATE_LO) {
		if (ps->end - p < 2 + HEX4_LEN || p[0] != '\\' ||
		    p[1] != 'u' || json_hex4(p + 2, ps->end, &lo) == -1 ||
		    lo < SURROGATE_LO || lo >= SURROGATE_END)
			return fail(ps, "a lone high surrogate");
		cp = SURROGATE_BASE + ((cp - SURROGATE_HI) << SURROGATE_BITS) +
		    (lo - SURROGATE_LO);
		p += 2 + HEX4_LEN;
	}
	*w = json_put_utf8(out, cp);
	ps->p = p;
	return 0;
}

/*
 * The string at ps->p (its opening quote), decoded into the arena with
 * a NUL. It never outgrows its text there: a string's decoded bytes and
 * NUL are fewer than its text with quotes, a number's text and NUL are
 * one more than its text but one of the bytes that end it is in no
 * value's text, unless it ends the document (the arena's last byte).
 */
static int
string_at(struct parser *ps, const char **out, size_t *outlen)
{
	struct json *doc = ps->doc;
	char *dst = doc->arena + doc->used;
	size_t n = 0, w;

	for (ps->p++; ps->p < ps->end && *ps->p != '"'; n += w) {
		if ((unsigned char)*ps->p < 0x20)
			return fail(ps, "a control character in a string");
		if (*ps->p == '\\') {
			if (escape_at(ps, dst + n, &w) == -1)
				return -1;
			continue;
		}
		if ((w = utf8_len((const unsigned char *)ps->p,
		    (const unsigned char *)ps->end)) == 0)
			return fail(ps, "invalid UTF-8");
		memcpy(dst + n, ps->p, w);
		ps->p += w;
	}
	if (ps->p >= ps->end)
		return fail(ps, "an unterminated string");
	ps->p++;
	dst[n] = '\0';
	doc->used += n + 1;
	assert(doc->used <= doc->cap);
	*out = dst;
	*outlen = n;
	return 0;
}

static int
is_digit(const char *p, const char *end)
{
	return p < end && *p >= '0' && *p <= '9';
}

/* RFC 8259 6: -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)? */
static int
number_at(struct parser *ps, struct json_value *v)
{
	const char *p = ps->p, *end = ps->end;
	struct json *doc = ps->doc;

	if (p < end && *p == '-')
		p++;
	if (!is_digit(p, end))
		return fail(ps, "expected a value");
	if (*p++ == '0' && is_digit(p, end))
		return fail(ps, "a number with a leading zero");
	while (is_digit(p, end))
		p++;
	if (p < end && *p == '.') {
		if (!is_digit(++p, end))
			return fail(ps, "a number without a digit after '.'");
		while (is_digit(p, end))
			p++;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		if (++p < end && (*p == '+' || *p == '-'))
			p++;
		if (!is_digit(p, end))
			return fail(ps, "a number without a digit in its "
			    "exponent");
		while (is_digit(p, end))
			p++;
	}
	v->s = doc->arena + doc->used;
	v->len = (size_t)(p - ps->p);
	memcpy(doc->arena + doc->used, ps->p, v->len);
	doc->arena[doc->used + v->len] = '\0';
	doc->used += v->len + 1;
	assert(doc->used <= doc->cap);
	ps->p = p;
	return 0;
}

static int
literal(struct parser *ps, const char *word, struct json_value *v)
{
	size_t n = strlen(word);

	if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
		return fail(ps, "expected a value");
	ps->p += n;
	v->len = word[0] == 't';
	return 0;
}

static int
name_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	if (c != 0)
		return c;
	return alen < blen ? -1 : alen > blen;
}

static int
kid_cmp(const void *a, const void *b, void *arg)
{
	const struct json_value *node = arg;
	const struct json_value *x = &node[*(const size_t *)a];
	const struct json_value *y = &node[*(const size_t *)b];

	return name_cmp(x->name, x->namelen, y->name, y->namelen);
}

/* The children of node idx, ps->stack[base..top), moved to the doc. */
static int
close_container(struct parser *ps, size_t idx, size_t base)
{
	struct json *doc = ps->doc;
	struct json_value *node = doc->node;
	size_t n = ps->top - base, *kids, *kidx;

	if (n == 0)
		return 0;	/* [] or {} */
	kids = ps->stack + base;
	if (node[idx].type == JSON_OBJECT) {
		qsort_r(kids, n, sizeof(*kids), kid_cmp, node);
		for (size_t i = 1; i < n; i++)
			if (kid_cmp(&kids[i - 1], &kids[i], node) == 0)
				return fail(ps, "an object names a member "
				    "twice");
	}
	if ((kidx = grow(doc->kidx, &doc->capkid, doc->nkid + n,
	    sizeof(*doc->kidx))) == NULL)
		return fail(ps, "out of memory");
	doc->kidx = kidx;
	memcpy(doc->kidx + doc->nkid, kids, n * sizeof(*kids));
	node[idx].first = doc->nkid;
	node[idx].n = n;
	doc->nkid += n;
	ps->top = base;
	return 0;
}

/* A member's name and ':' at ps->p, decoded into *name. */
static int
member_name(struct parser *ps, const char **name, size_t *namelen)
{
	skip_ws(ps);
	if (ps->p >= ps->end || *ps->p != '"')
		return fail(ps, "expected a member name");
	if (string_at(ps, name, namelen) == -1)
		return -1;
	skip_ws(ps);
	if (ps->p >= ps->end || *ps->p != ':')
		return fail(ps, "expected ':'");
	ps->p++;
	return 0;
}

/* The array or object at ps->p, whose node is idx. */
static int
container(struct parser *ps, size_t idx)
{
	char close = *ps->p == '{' ? '}' : ']';
	const char *name = NULL;
	size_t base = ps->top, kid, namelen = 0, *stack;

	if (++ps->depth > JSON_DEPTH_MAX)
		return fail(ps, "arrays and objects nested too deep");
	ps->p++;
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == close)
		ps->p++;
	else
		for (;;) {
			if (close == '}' &&
			    member_name(ps, &name, &namelen) == -1)
				return -1;
			if (value(ps, &kid) == -1)
				return -1;
			ps->doc->node[kid].name = name;
			ps->doc->node[kid].namelen = namelen;
			if ((stack = grow(ps->stack, &ps->cap, ps->top + 1,
			    sizeof(*ps->stack))) == NULL)
				return fail(ps, "out of memory");
			ps->stack = stack;
			ps->stack[ps->top++] = kid;
			skip_ws(ps);
			if (ps->p < ps->end && *ps->p == ',') {
				ps->p++;
				continue;
			}
			if (ps->p < ps->end && *ps->p == close) {
				ps->p++;
				break;
			}
			return fail(ps, close == '}' ? "expected ',' or '}'" :
			    "expected ',' or ']'");
		}
	ps->depth--;
	return close_container(ps, idx, base);
}

static int
value(struct parser *ps, size_t *idx)
{
	static const struct { char c; enum json_type type; } first[] = {
		{ '{', JSON_OBJECT }, { '[', JSON_ARRAY }, { '"', JSON_STRING },
		{ 't', JSON_BOOL }, { 'f', JSON_BOOL }, { 'n', JSON_NULL },
	};
	enum json_type type = JSON_NUMBER;
	struct json_value *v;

	skip_ws(ps);
	if (ps->p >= ps->end)
		return fail(ps, "expected a value");
	for (size_t i = 0; i < sizeof(first) / sizeof(first[0]); i++)
		if (*ps->p == first[i].c)
			type = first[i].type;
	if (new_node(ps, type, idx) == -1)
		return -1;
	v = &ps->doc->node[*idx];
	switch (type) {
	case JSON_OBJECT:
	case JSON_ARRAY:
		return container(ps, *idx);
	case JSON_STRING:
		return string_at(ps, &v->s, &v->len);
	case JSON_BOOL:
		return literal(ps, *ps->p == 't' ? "true" : "false", v);
	case JSON_NULL:
		return literal(ps, "null", v);
	default:
		return number_at(ps, v);
	}
}

/* The children's indices made pointers, now that no node moves. */
static int
link_kids(struct json *doc)
{
	if (doc->nkid > 0 && (doc->kid = calloc(doc->nkid,
	    sizeof(*doc->kid))) == NULL)
		return -1;
	for (size_t i = 0; i < doc->nkid; i++)
		doc->kid[i] = &doc->node[doc->kidx[i]];
	for (size_t i = 0; i < doc->nnode; i++)
		if (doc->node[i].n > 0)
			doc->node[i].kids = doc->kid + doc->node[i].first;
	free(doc->kidx);
	doc->kidx = NULL;
	return 0;
}

static int
document(struct parser *ps)
{
	static const char bom[] = "\xef\xbb\xbf";
	size_t root;

	if ((size_t)(ps->end - ps->p) >= sizeof(bom) - 1 &&
	    memcmp(ps->p, bom, sizeof(bom) - 1) == 0)
		return fail(ps, "a byte order mark");
	if (value(ps, &root) == -1)
		return -1;
	skip_ws(ps);
	if (ps->p != ps->end)
		return fail(ps, "bytes after the value");
	if (link_kids(ps->doc) == -1)
		return fail(ps, "out of memory");
	return 0;
}

struct json *
json_parse(const char *text, size_t len, char *err, size_t errlen)
{
	struct parser ps;
	struct json *doc;

	memset(&ps, 0, sizeof(ps));
	if (len > JSON_SIZE_MAX) {
		snprintf(err, errlen, "larger than %d bytes", JSON_SIZE_MAX);
		return NULL;
	}
	if ((doc = calloc(1, sizeof(*doc))) == NULL ||
	    (doc->arena = malloc(len + 1)) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	doc->cap = len + 1;
	ps.doc = doc;
	ps.start = ps.p = text;
	ps.end = text + len;
	ps.err = err;
	ps.errlen = errlen;
	if (document(&ps) == -1)
		goto fail;
	free(ps.stack);
	return doc;
fail:
	free(ps.stack);
	json_free(&doc);
	return NULL;
}

void
json_free(struct json **docp)
{
	struct json *doc = *docp;

	if (doc == NULL)
		return;
	free(doc->node);
	free(doc->arena);
	free(doc->kidx);
	free(doc->kid);
	free(doc);
	*docp = NULL;
}

const struct json_value *
json_root(const struct json *doc)
{
	return &doc->node[0];
}

enum json_type
json_type(const struct json_value *v)
{
	return v->type;
}

size_t
json_len(const struct json_value *v)
{
	return v->n;
}

const struct json_value *
json_index(const struct json_value *v, size_t i, const char **name,
    size_t *namelen)
{
	if (i >= v->n)
		return NULL;
	if (name != NULL)
		*name = v->kids[i]->name;
	if (namelen != NULL)
		*namelen = v->kids[i]->namelen;
	return v->kids[i];
}

/* Binary search: an object's members are in name order. */
const struct json_value *
json_member(const struct json_value *obj, const char *name, size_t namelen)
{
	size_t lo = 0, hi = obj->n;

	if (obj->type != JSON_OBJECT)
		return NULL;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct json_value *k = obj->kids[mid];
		int c = name_cmp(name, namelen, k->name, k->namelen);

		if (c == 0)
			return k;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

/*
 * The name at *pp in path, unescaped into buf: its length, with *pp
 * moved past it and the '.' after it (to NULL after the last name), or
 * -1 when the path is not valid there.
 */
static int
path_name(const char **pp, char buf[JSON_PATH_MAX])
{
	const char *p = *pp;
	size_t n = 0;

	for (; *p != '\0' && *p != '.'; p++) {
		if (*p == '\\' && p[1] != '.' && p[1] != '\\')
			return -1;
		if (*p == '\\')
			p++;
		if (n == JSON_PATH_MAX)
			return -1;
		buf[n++] = *p;
	}
	if (n == 0)
		return -1;
	*pp = *p == '.' ? p + 1 : NULL;
	return (int)n;
}

const struct json_value *
json_path(const struct json_value *obj, const char *path)
{
	char buf[JSON_PATH_MAX];
	int n;

	if (!json_path_valid(path))
		return NULL;
	while (obj != NULL && path != NULL) {
		if ((n = path_name(&path, buf)) == -1)
			return NULL;
		obj = json_member(obj, buf, (size_t)n);
	}
	return obj;
}

int
json_path_valid(const char *path)
{
	char buf[JSON_PATH_MAX];

	do {
		if (path_name(&path, buf) == -1)
			return 0;
	} while (path != NULL);
	return 1;
}

const char *
json_get_string(const struct json_value *v, size_t *len)
{
	if (v->type != JSON_STRING)
		return NULL;
	if (len != NULL)
		*len = v->len;
	return v->s;
}

int
json_get_number(const struct json_value *v, double *out)
{
	char *end;

	if (v->type != JSON_NUMBER)
		return -1;
	errno = 0;
	*out = strtod(v->s, &end);
	if (end != v->s + v->len || !isfinite(*out))
		return -1;
	return 0;
}

int
json_get_bool(const struct json_value *v, int *out)
{
	if (v->type != JSON_BOOL)
		return -1;
	*out = (int)v->len;
	return 0;
}

/* Canonical text going out: as much as fits in p[0..cap), len all of it. */
struct out {
	char	*p;
	size_t	 cap, len;
};

static void
put(struct out *o, const char *s, size_t n)
{
	if (o->len < o->cap)
		memcpy(o->p + o->len, s, n < o->cap - o->len ? n :
		    o->cap - o->len);
	o->len += n;
}

static void
put_string(struct out *o, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	char esc[sizeof("\\u00XX")];
	size_t run = 0;

	put(o, "\"", 1);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		const char *e = c == '"' ? "\\\"" : c == '\\' ? "\\\\" :
		    c == '\b' ? "\\b" : c == '\f' ? "\\f" : c == '\n' ? "\\n" :
		    c == '\r' ? "\\r" : c == '\t' ? "\\t" : NULL;

		if (e == NULL && c >= 0x20)
			continue;
		put(o, s + run, i - run);
		run = i + 1;
		if (e == NULL) {
			snprintf(esc, sizeof(esc), "\\u00%c%c", hex[c >> 4],
			    hex[c & 0xf]);
			e = esc;
		}
		put(o, e, strlen(e));
	}
	put(o, s + run, len - run);
	put(o, "\"", 1);
}

/* A number's exponent, its sign included, from p (past the 'e'): 0, or
 * -1 when it is past NUMBER_EXP_MAX. */
static int
exponent(const char *p, const char *end, long long *e)
{
	int neg = 0;

	*e = 0;
	if (p < end && (*p == '+' || *p == '-'))
		neg = *p++ == '-';
	for (; p < end; p++)
		if ((*e = *e * 10 + (*p - '0')) > NUMBER_EXP_MAX)
			return -1;
	if (neg)
		*e = -*e;
	return 0;
}

/*
 * A number's text (valid: number_at() read it) as its value in one form:
 * its significant digits D, without leading or trailing zeros, and the
 * power of ten E they are scaled by; then D and E zeros when the value
 * is an integer of at most NUMBER_INT_DIGITS digits, else D, 'e' and E.
 * 1, 1.0, 1e0 and 10E-1 are all "1"; 1.5 is "15e-1"; -0 is "0". The
 * value is kept exactly (no double between): two numbers are one text
 * only when they are one value. An exponent past NUMBER_EXP_MAX is
 * written as the text gave it (still one value to one text).
 */
static void
put_number(struct out *o, const char *s, size_t len)
{
	const char *p = s, *end = s + len, *digits, *frac = NULL;
	size_t ndig, nint, lead = 0, trail = 0, nfrac = 0;
	long long e = 0, scale;
	int neg = 0;
	char buf[NUMBER_EXP_TEXT];

	if (p < end && *p == '-') {
		neg = 1;
		p++;
	}
	digits = p;
	while (p < end && *p >= '0' && *p <= '9')
		p++;
	nint = (size_t)(p - digits);
	if (p < end && *p == '.') {
		frac = ++p;
		while (p < end && *p >= '0' && *p <= '9')
			p++;
		nfrac = (size_t)(p - frac);
	}
	if (p < end && (*p == 'e' || *p == 'E') &&
	    exponent(p + 1, end, &e) == -1) {
		put(o, s, len);		/* out of reach: as the text gave it */
		return;
	}
	/* The digits D run over the integer part and the fraction. */
	ndig = nint + nfrac;
#define DIGIT(i) ((i) < nint ? digits[(i)] : frac[(i) - nint])
	while (lead < ndig && DIGIT(lead) == '0')
		lead++;
	if (lead == ndig) {
		put(o, "0", 1);
		return;
	}
	while (DIGIT(ndig - 1 - trail) == '0')
		trail++;
	scale = e - (long long)nfrac + (long long)trail;
	if (neg)
		put(o, "-", 1);
	for (size_t i = lead; i < ndig - trail; i++) {
		char d = DIGIT(i);

		put(o, &d, 1);
	}
#undef DIGIT
	if (scale >= 0 && (long long)(ndig - trail - lead) + scale <=
	    NUMBER_INT_DIGITS) {
		for (long long i = 0; i < scale; i++)
			put(o, "0", 1);
		return;
	}
	snprintf(buf, sizeof(buf), "e%lld", scale);
	put(o, buf, strlen(buf));
}

static void
put_value(struct out *o, const struct json_value *v)
{
	int object = v->type == JSON_OBJECT;

	switch (v->type) {
	case JSON_NULL:
		put(o, "null", 4);
		return;
	case JSON_BOOL:
		put(o, v->len ? "true" : "false", v->len ? 4 : 5);
		return;
	case JSON_NUMBER:
		put_number(o, v->s, v->len);
		return;
	case JSON_STRING:
		put_string(o, v->s, v->len);
		return;
	case JSON_ARRAY:
	case JSON_OBJECT:
		break;
	}
	put(o, object ? "{" : "[", 1);
	for (size_t i = 0; i < v->n; i++) {
		if (i > 0)
			put(o, ",", 1);
		if (object) {
			put_string(o, v->kids[i]->name, v->kids[i]->namelen);
			put(o, ":", 1);
		}
		put_value(o, v->kids[i]);
	}
	put(o, object ? "}" : "]", 1);
}

size_t
json_write(const struct json_value *v, char *out, size_t outlen)
{
	struct out o = { out, outlen > 0 ? outlen - 1 : 0, 0 };

	put_value(&o, v);
	if (outlen > 0)
		out[o.len < o.cap ? o.len : o.cap] = '\0';
	return o.len;
}
