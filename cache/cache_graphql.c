/* SPDX-License-Identifier: MIT */
/*
 * GraphQL POST bodies: a strict JSON scan of the top-level object (RFC
 * 8259), the query text decoded, and its operations told apart by the
 * first word of each top-level definition (GraphQL spec, "Document"). See
 * cache_graphql.h.
 *
 * Calls cache_keyrule.c's digest. Called from outside cache/.
 */

#include "cache/cache_graphql.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/json.h"

#define OPNAME_EMPTY	"operationName=\"\""	/* a digest part */
#define EXTRA_PART	"member"	/* before each other member's parts */

/* A run of body text: [p, end). */
struct span {
	const char	*p;
	const char	*end;
};

/* The members of the body: the three every server reads, whether each
 * was seen, and the others (documentId, extensions, ...), which a server
 * may read instead of the query: each is keyed too. */
struct members {
	struct span	 query, opname, vars;
	int		 has_query, has_opname, has_vars;
	struct span	 extra_name[GRAPHQL_EXTRA_MAX];
	struct span	 extra_value[GRAPHQL_EXTRA_MAX];
	int		 nextra;
};

static int
is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void
skip_ws(struct span *s)
{
	while (s->p < s->end && is_ws(*s->p))
		s->p++;
}

/* One escape after a '\\' at *pp: decoded into out (if not NULL). The
 * bytes written, or -1 when it is not a JSON escape. */
static int
escape(const char **pp, const char *end, char *out)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *p = *pp, *at;
	unsigned cp, lo;
	char buf[4];

	if (p >= end)
		return -1;
	if (*p != 'u') {
		if (*p == '\0' || (at = strchr(from, *p)) == NULL)
			return -1;
		if (out != NULL)
			*out = to[at - from];
		*pp = p + 1;
		return 1;
	}
	if (json_hex4(p + 1, end, &cp) == -1)
		return -1;
	p += 5;
	if (cp >= 0xdc00 && cp <= 0xdfff)
		return -1;	/* a lone low surrogate */
	if (cp >= 0xd800 && cp <= 0xdbff) {
		if (end - p < 6 || p[0] != '\\' || p[1] != 'u' ||
		    json_hex4(p + 2, end, &lo) == -1 || lo < 0xdc00 || lo > 0xdfff)
			return -1;
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
		p += 6;
	}
	*pp = p;
	return (int)json_put_utf8(out != NULL ? out : buf, cp);
}

/*
 * A JSON string at s->p (its opening quote), moved past; decoded into out
 * (if not NULL, room for its length) with *outlen set. 0 or -1.
 */
static int
string_at(struct span *s, char *out, size_t *outlen)
{
	const char *p = s->p + 1;
	size_t n = 0;
	int w;

	if (s->p >= s->end || *s->p != '"')
		return -1;
	while (p < s->end && *p != '"') {
		if ((unsigned char)*p < 0x20)
			return -1;	/* a raw control character */
		if (*p != '\\') {
			if (out != NULL)
				out[n] = *p;
			n++;
			p++;
			continue;
		}
		p++;
		if ((w = escape(&p, s->end, out != NULL ? out + n : NULL)) < 0)
			return -1;
		n += (size_t)w;
	}
	if (p >= s->end)
		return -1;
	s->p = p + 1;
	if (outlen != NULL)
		*outlen = n;
	return 0;
}

static int
literal(struct span *s, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0)
		return -1;
	s->p += n;
	return 0;
}

static int
number(struct span *s)
{
	const char *p = s->p;

	if (p < s->end && *p == '-')
		p++;
	if (p >= s->end || *p < '0' || *p > '9')
		return -1;
	if (*p == '0')
		p++;
	else
		while (p < s->end && *p >= '0' && *p <= '9')
			p++;
	if (p < s->end && *p == '.') {
		if (++p >= s->end || *p < '0' || *p > '9')
			return -1;
		while (p < s->end && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < s->end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < s->end && (*p == '+' || *p == '-'))
			p++;
		if (p >= s->end || *p < '0' || *p > '9')
			return -1;
		while (p < s->end && *p >= '0' && *p <= '9')
			p++;
	}
	s->p = p;
	return 0;
}

static int skip_value(struct span *s, int depth);

/* An array or an object at s->p, moved past. 0 or -1. */
static int
skip_container(struct span *s, int depth)
{
	char close = *s->p == '{' ? '}' : ']';
	int object = close == '}', first = 1;

	s->p++;
	for (;;) {
		skip_ws(s);
		if (s->p < s->end && *s->p == close && first) {
			s->p++;
			return 0;
		}
		if (object) {
			if (string_at(s, NULL, NULL) == -1)
				return -1;
			skip_ws(s);
			if (s->p >= s->end || *s->p++ != ':')
				return -1;
		}
		if (skip_value(s, depth + 1) == -1)
			return -1;
		skip_ws(s);
		first = 0;
		if (s->p < s->end && *s->p == ',') {
			s->p++;
			continue;
		}
		if (s->p < s->end && *s->p == close) {
			s->p++;
			return 0;
		}
		return -1;
	}
}

static int
skip_value(struct span *s, int depth)
{
	skip_ws(s);
	if (s->p >= s->end || depth > GRAPHQL_DEPTH_MAX)
		return -1;
	switch (*s->p) {
	case '{':
	case '[':
		return skip_container(s, depth);
	case '"':
		return string_at(s, NULL, NULL);
	case 't':
		return literal(s, "true");
	case 'f':
		return literal(s, "false");
	case 'n':
		return literal(s, "null");
	default:
		return number(s);
	}
}

/*
 * A top-level member's name must be plain: printable ASCII without an
 * escape, so that its raw text is what every parser reads. Another
 * parser may decode "qu\u0065ry" to "query", or (Go's encoding/json,
 * .NET's web defaults) take "QUERY" for it, and let the last of two
 * win: a body with such a name is not one we can vouch for.
 */
static int
plain_name(const struct span *name)
{
	for (const char *p = name->p + 1; p < name->end - 1; p++)
		if (*p == '\\' || (unsigned char)*p >= 0x7f)
			return 0;
	return 1;
}

/* Notes the value span v of a member named name (raw, quotes and all). */
static int
note_member(const struct span *name, const struct span *v, void *arg)
{
	struct members *m = arg;
	static const struct { const char *name; size_t off, seen; } known[] = {
		{ "\"query\"", offsetof(struct members, query),
		  offsetof(struct members, has_query) },
		{ "\"operationName\"", offsetof(struct members, opname),
		  offsetof(struct members, has_opname) },
		{ "\"variables\"", offsetof(struct members, vars),
		  offsetof(struct members, has_vars) },
	};
	size_t n = (size_t)(name->end - name->p);

	if (!plain_name(name))
		return -1;
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		int *seen = (int *)(void *)((char *)m + known[i].seen);

		if (strlen(known[i].name) != n ||
		    strncasecmp(known[i].name, name->p, n) != 0)
			continue;
		if (memcmp(known[i].name, name->p, n) != 0)
			return -1;	/* "Query": the query to some */
		if (*seen)
			return -1;	/* named twice: which one counts? */
		*seen = 1;
		*(struct span *)(void *)((char *)m + known[i].off) = *v;
		return 0;
	}
	for (int i = 0; i < m->nextra; i++)
		if ((size_t)(m->extra_name[i].end - m->extra_name[i].p) == n &&
		    memcmp(m->extra_name[i].p, name->p, n) == 0)
			return -1;	/* named twice */
	if (m->nextra == GRAPHQL_EXTRA_MAX)
		return -1;
	m->extra_name[m->nextra] = *name;
	m->extra_value[m->nextra++] = *v;
	return 0;
}

typedef int member_cb(const struct span *name, const struct span *v,
    void *arg);

/* Calls fn with each member of the body's one object (its name and value
 * spans, raw), as long as fn returns 0. 0, or -1 when the body is not one
 * object or fn said -1. */
static int
each_member(const char *body, size_t len, member_cb *fn, void *arg)
{
	struct span s = { body, body + len }, name, v;

	skip_ws(&s);
	if (s.p >= s.end || *s.p != '{')
		return -1;
	s.p++;
	skip_ws(&s);
	if (s.p < s.end && *s.p == '}')
		return -1;	/* {}: no query */
	for (;;) {
		skip_ws(&s);
		name.p = s.p;
		if (string_at(&s, NULL, NULL) == -1)
			return -1;
		name.end = s.p;
		skip_ws(&s);
		if (s.p >= s.end || *s.p++ != ':')
			return -1;
		skip_ws(&s);
		v.p = s.p;
		if (skip_value(&s, 1) == -1)
			return -1;
		v.end = s.p;
		if (fn(&name, &v, arg) == -1)
			return -1;
		skip_ws(&s);
		if (s.p < s.end && *s.p == ',') {
			s.p++;
			continue;
		}
		if (s.p >= s.end || *s.p++ != '}')
			return -1;
		skip_ws(&s);
		return s.p == s.end ? 0 : -1;
	}
}

/* The body's one object, its members noted. 0 or -1. */
static int
read_members(const char *body, size_t len, struct members *m)
{
	memset(m, 0, sizeof(*m));
	return each_member(body, len, note_member, m);
}

/* Past a GraphQL string at q[i] ('"' or '"""'): the index after it, or
 * 0 when it does not end. */
static size_t
skip_gql_string(const char *q, size_t len, size_t i)
{
	if (len - i >= 3 && memcmp(q + i, "\"\"\"", 3) == 0) {
		for (i += 3; i + 3 <= len; i++) {
			if (q[i] == '\\' && len - i >= 4 &&
			    memcmp(q + i + 1, "\"\"\"", 3) == 0)
				i += 3;
			else if (memcmp(q + i, "\"\"\"", 3) == 0)
				return i + 3;
		}
		return 0;
	}
	for (i++; i < len && q[i] != '\n' && q[i] != '\r'; i++) {
		if (q[i] == '\\')
			i++;
		else if (q[i] == '"')
			return i + 1;
	}
	return 0;
}

static int
is_name_start(char c)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int
is_name_char(char c)
{
	return is_name_start(c) || (c >= '0' && c <= '9');
}

static int
word_is(const char *w, size_t n, const char *word)
{
	return n == strlen(word) && memcmp(w, word, n) == 0;
}

/*
 * What the document q defines: the names outside any braces, brackets and
 * parentheses are the definitions' keywords and names; a '{' there opens
 * an operation (a shorthand query, or the one a keyword began) unless a
 * fragment's.
 */
static enum graphql_kind
classify(const char *q, size_t len)
{
	size_t i = 0, n;
	int depth = 0, ops = 0, fragment = 0;

	while (i < len) {
		char c = q[i];

		if (c == '#') {
			while (i < len && q[i] != '\n' && q[i] != '\r')
				i++;
		} else if (c == '"') {
			if ((i = skip_gql_string(q, len, i)) == 0)
				return GRAPHQL_INVALID;
		} else if (c == '{' || c == '(' || c == '[') {
			if (depth == 0 && c == '{') {
				ops += !fragment;
				fragment = 0;
			}
			depth++;
			i++;
		} else if (c == '}' || c == ')' || c == ']') {
			if (--depth < 0)
				return GRAPHQL_INVALID;
			i++;
		} else if (is_name_start(c)) {
			for (n = 1; i + n < len && is_name_char(q[i + n]); n++)
				;
			if (depth == 0 && (word_is(q + i, n, "mutation") ||
			    word_is(q + i, n, "subscription")))
				return GRAPHQL_MUTATION;
			if (depth == 0 && word_is(q + i, n, "fragment"))
				fragment = 1;
			i += n;
		} else {
			i++;
		}
	}
	return depth == 0 && ops > 0 ? GRAPHQL_QUERY : GRAPHQL_INVALID;
}

/* A JSON value's text without the whitespace between its tokens. */
static size_t
compact(const struct span *v, char *out)
{
	size_t n = 0;
	int in_string = 0;

	for (const char *p = v->p; p < v->end; p++) {
		if (in_string) {
			out[n++] = *p;
			if (*p == '\\' && p + 1 < v->end)
				out[n++] = *++p;
			else if (*p == '"')
				in_string = 0;
		} else if (!is_ws(*p)) {
			out[n++] = *p;
			in_string = *p == '"';
		}
	}
	return n;
}

/* A member that must be a string or null (or absent): decoded into out
 * (room for its span), "" for null. 0 or -1. */
static int
string_or_null(const struct span *v, int has, char *out, size_t *outlen)
{
	struct span s = *v;

	*outlen = 0;
	if (!has || (v->end - v->p == 4 && memcmp(v->p, "null", 4) == 0))
		return 0;
	return string_at(&s, out, outlen);
}

/* Past optional whitespace (RFC 9110 OWS) at p. */
static const char *
ows(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* Does p begin with word, case-insensitively? Past it, or NULL. */
static const char *
word_at(const char *p, const char *word)
{
	size_t n = strlen(word);

	return strncasecmp(p, word, n) == 0 ? p + n : NULL;
}

int
graphql_media_type(const char *ctype)
{
	const char *p;

	if (ctype == NULL || (p = word_at(ows(ctype), GRAPHQL_MEDIA_TYPE)) ==
	    NULL)
		return 0;
	p = ows(p);
	if (*p == ';') {
		p = ows(p + 1);
		if ((p = word_at(p, "charset=")) == NULL)
			return 0;
		if ((p = word_at(p, *p == '"' ? "\"utf-8\"" : "utf-8")) ==
		    NULL)
			return 0;
		p = ows(p);
	}
	return *p == '\0';
}

enum graphql_kind
graphql_read(const char *body, size_t len, struct keyrule_digest *d)
{
	struct members m;
	enum graphql_kind kind = GRAPHQL_INVALID;
	size_t qlen, olen, vlen = 0;
	char *buf = NULL;
	int null_vars;

	if (read_members(body, len, &m) == -1 || !m.has_query ||
	    *m.query.p != '"')
		return GRAPHQL_INVALID;
	null_vars = !m.has_vars || (m.vars.end - m.vars.p == 4 &&
	    memcmp(m.vars.p, "null", 4) == 0);
	if (!null_vars && *m.vars.p != '{')
		return GRAPHQL_INVALID;
	/* Decoded, nothing is longer than its JSON text. */
	if ((buf = malloc(3 * len + 1)) == NULL)
		return GRAPHQL_INVALID;
	if (string_or_null(&m.query, 1, buf, &qlen) == -1 ||
	    string_or_null(&m.opname, m.has_opname, buf + len, &olen) == -1)
		goto out;
	if (!null_vars)
		vlen = compact(&m.vars, buf + 2 * len);
	if ((kind = classify(buf, qlen)) == GRAPHQL_QUERY) {
		keyrule_digest_part(d, buf, qlen);
		keyrule_digest_part(d, buf + len, olen);
		keyrule_digest_part(d, buf + 2 * len, vlen);
		/* "" names no operation (graphql-js: an error); absent or
		 * null, the document's only one. A fourth part keeps them
		 * apart (and the others' digests as they were). */
		if (m.has_opname && *m.opname.p == '"' && olen == 0)
			keyrule_digest_part(d, OPNAME_EMPTY,
			    strlen(OPNAME_EMPTY));
		/* Each other member, as its name and compact value: a body
		 * with one is a key of its own (and its refresh resends it). */
		for (int i = 0; i < m.nextra; i++) {
			keyrule_digest_part(d, EXTRA_PART, strlen(EXTRA_PART));
			keyrule_digest_part(d, m.extra_name[i].p,
			    (size_t)(m.extra_name[i].end - m.extra_name[i].p));
			keyrule_digest_part(d, buf + 2 * len,
			    compact(&m.extra_value[i], buf + 2 * len));
		}
	}
out:
	free(buf);
	return kind;
}

/* Is name "errors", with a value other than null or []? */
static int
on_answer_member(const struct span *name, const struct span *v, void *arg)
{
	int *failed = arg;
	struct span rest = *v;

	if (name->end - name->p != 8 || memcmp(name->p, "\"errors\"", 8) != 0)
		return 0;
	if (literal(&rest, "null") == 0)
		return 0;
	if (*rest.p == '[') {
		rest.p++;
		skip_ws(&rest);
		if (rest.p < rest.end && *rest.p == ']')
			return 0;
	}
	*failed = 1;
	return 0;
}

int
graphql_errors(const char *body, size_t len)
{
	int failed = 0;

	(void)each_member(body, len, on_answer_member, &failed);
	return failed;
}

enum graphql_kind
graphql_document(const char *q, size_t len)
{
	return classify(q, len);
}

int
graphql_is_mutation(const char *body, size_t len)
{
	struct keyrule_digest d;
	enum graphql_kind k;

	keyrule_digest_init(&d, NULL, 0, "graphql");
	k = graphql_read(body, len, &d);
	keyrule_digest_drop(&d);	/* only the kind is wanted */
	return k == GRAPHQL_MUTATION;
}

/* ---- a response's objects ----------------------------------------- */

struct objects {
	graphql_object_cb	*fn;
	void			*arg;
	int			 n;
};

/* What a member of an object says of the object: its __typename or its
 * id, if it is one, decoded into out. */
struct found {
	char	 text[GRAPHQL_ID_MAX + 1];
	size_t	 len;
	int	 has;
};

static void	walk_value(struct span *s, int depth, int listed,
		    struct objects *o);

/* A member's value at s->p that is a string (or, numeric, a number) of at
 * most max bytes: into f. Moves past the value either way. */
static void
take_scalar(struct span *s, struct found *f, size_t max, int numeric)
{
	struct span probe = *s;
	const char *start = s->p;
	size_t n;

	if (*s->p == '"' && string_at(&probe, NULL, &n) == 0 && n <= max &&
	    string_at(s, f->text, &f->len) == 0) {
		f->has = 1;
		return;
	}
	if (numeric && *s->p != '"' && number(s) == 0 &&
	    (size_t)(s->p - start) <= max) {
		memcpy(f->text, start, (size_t)(s->p - start));
		f->len = (size_t)(s->p - start);
		f->has = 1;
		return;
	}
	s->p = start;
	(void)skip_value(s, GRAPHQL_DEPTH_MAX);
}

static int
name_is(const struct span *name, const char *quoted)
{
	size_t n = strlen(quoted);

	return (size_t)(name->end - name->p) == n &&
	    memcmp(name->p, quoted, n) == 0;
}

/* An object at s->p (valid JSON: each_member read it), its members
 * walked, then itself if it is one of GraphQL's. */
static void
walk_object(struct span *s, int depth, int listed, struct objects *o)
{
	struct found type = { .has = 0 }, id = { .has = 0 };
	struct span name;

	s->p++;
	for (skip_ws(s); s->p < s->end && *s->p != '}'; skip_ws(s)) {
		name.p = s->p;
		(void)string_at(s, NULL, NULL);
		name.end = s->p;
		skip_ws(s);
		s->p++;		/* ':' */
		skip_ws(s);
		if (name_is(&name, "\"__typename\""))
			take_scalar(s, &type, GRAPHQL_NAME_MAX, 0);
		else if (name_is(&name, "\"id\""))
			take_scalar(s, &id, GRAPHQL_ID_MAX, 1);
		else
			walk_value(s, depth + 1, listed, o);
		skip_ws(s);
		if (s->p < s->end && *s->p == ',')
			s->p++;
	}
	s->p++;
	if (type.has && id.has && type.len > 0) {
		o->fn(type.text, type.len, id.text, id.len, listed, o->arg);
		o->n++;
	}
}

static void
walk_value(struct span *s, int depth, int listed, struct objects *o)
{
	skip_ws(s);
	if (s->p >= s->end)
		return;
	if (depth >= GRAPHQL_DEPTH_MAX || (*s->p != '{' && *s->p != '[')) {
		(void)skip_value(s, depth);
		return;
	}
	if (*s->p == '{') {
		walk_object(s, depth, listed, o);
		return;
	}
	s->p++;
	for (skip_ws(s); s->p < s->end && *s->p != ']'; skip_ws(s)) {
		walk_value(s, depth + 1, 1, o);
		skip_ws(s);
		if (s->p < s->end && *s->p == ',')
			s->p++;
	}
	s->p++;
}

static int
on_data_member(const struct span *name, const struct span *v, void *arg)
{
	struct span s = *v;

	if (name_is(name, "\"data\""))
		walk_value(&s, 1, 0, arg);
	return 0;
}

int
graphql_objects(const char *body, size_t len, graphql_object_cb *fn,
    void *arg)
{
	struct objects o = { fn, arg, 0 };

	if (each_member(body, len, on_data_member, &o) == -1)
		return -1;
	return o.n;
}
