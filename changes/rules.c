/* SPDX-License-Identifier: MIT */
/*
 * Which tags a row change purges (rules.h): the escaping of values, the
 * rules parsed from their templates once, the row images an event gives
 * (what is known of each column of the old and the new row), and the
 * tags of a row under its table's rule or the default one.
 *
 * Calls pgoutput.h's types and common/dict.c. No I/O.
 */

#include "changes/rules.h"

#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dict.h"

#define RULES_MAGIC		0x52554c45u	/* "RULE" */
/* "schema.table" as the rules are looked up: two names and a dot. */
#define QUALIFIED_MAX		(2 * CHANGES_NAME_MAX + 2)
#define TEMPLATE_SEPARATORS	" \t\r\n"

/* A piece of a template: literal text, or the name of a column. */
struct part {
	char		*text;
	int		 column;
};

struct template {
	struct part	*parts;
	int		 nparts;
	char		*broad;		/* what stands in for it */
};

struct rule {
	char		 table[QUALIFIED_MAX];	/* "schema.table" */
	struct template	 tmpl[RULES_TEMPLATES_MAX];
	int		 n;
	int		 hard;		/* its purges are hard */
};

/* What is known of one column of a row. */
enum cell_state {
	CELL_UNKNOWN,	/* not in the stream */
	CELL_NULL,
	CELL_TEXT,
};

struct cell {
	enum cell_state	 state;
	const char	*data;
	size_t		 len;
};

struct rules {
	uint32_t	 magic;
	struct dict	*byname;	/* "schema.table" -> struct rule */
	struct rule	*v;
	size_t		 n;
	struct cell	*old, *new;	/* PGOUTPUT_COLUMNS_MAX each */
	char		 table_tag[CHANGES_TAG_MAX + 1];	/* T, of this change */
	char		 family[CHANGES_TAG_MAX + 1];	/* "T:*", or T */
	int		 hard;		/* the default rule's purges are hard */
	int		 emit_hard;	/* of this change's rule */
	rules_emit_cb	*emit;		/* of this change */
	void		*arg;
};

/* ---- escaping ----------------------------------------------------------- */

static int
unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	    (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
	    c == '~';
}

int
rules_escape(const char *s, size_t len, char *out, size_t outlen)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t i, o = 0;

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (unreserved(c)) {
			if (o + 1 >= outlen)
				return -1;
			out[o++] = (char)c;
		} else {
			if (o + 3 >= outlen)
				return -1;
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 0xf];
		}
	}
	if (o >= outlen)
		return -1;
	out[o] = '\0';
	return (int)o;
}

/* T for "schema.table" (public's without the schema), into out. */
static int
table_tag(const char *schema, const char *name, char out[CHANGES_TAG_MAX + 1])
{
	int n = 0, m;

	if (strcmp(schema, "public") != 0) {
		if ((n = rules_escape(schema, strlen(schema), out,
		    CHANGES_TAG_MAX)) == -1)
			return -1;
		out[n++] = '.';
	}
	m = rules_escape(name, strlen(name), out + n, CHANGES_TAG_MAX + 1 -
	    (size_t)n);
	return m == -1 ? -1 : n + m;
}

/* ---- rules -------------------------------------------------------------- */

static void
template_clear(struct template *tp)
{
	int i;

	for (i = 0; i < tp->nparts; i++)
		free(tp->parts[i].text);
	free(tp->parts);
	free(tp->broad);
	memset(tp, 0, sizeof(*tp));
}

static int
add_part(struct template *tp, const char *s, size_t len, int column)
{
	struct part *grown;

	if ((grown = realloc(tp->parts, (size_t)(tp->nparts + 1) *
	    sizeof(*grown))) == NULL)
		return -1;
	tp->parts = grown;
	if ((grown[tp->nparts].text = strndup(s, len)) == NULL)
		return -1;
	grown[tp->nparts++].column = column;
	return 0;
}

/* The broad tag: a template without columns stands for itself
 * ("orders"); one whose text before the first '{' ends in ':' for the
 * family of its tags ("customers:{id}": "customers:*", changes.h); any
 * other for the table's tag. */
static int
template_broad(struct template *tp, const char *tok, size_t len,
    const char *ttag)
{
	size_t n = strcspn(tok, "{");

	if (n >= len)
		tp->broad = strndup(tok, len);
	else if (n > 0 && tok[n - 1] == ':' && (tp->broad = malloc(n + 2)) !=
	    NULL)
		snprintf(tp->broad, n + 2, "%.*s" CHANGES_FAMILY, (int)n, tok);
	else if (n == 0 || tok[n - 1] != ':')
		tp->broad = strdup(ttag);
	return tp->broad == NULL ? -1 : 0;
}

/* One template (len bytes at tok) into tp. 0, or -1 with err. */
static int
template_parse(struct template *tp, const char *tok, size_t len,
    const char *ttag, char *err, size_t errlen)
{
	size_t i = 0, j;

	if (len > CHANGES_TAG_MAX) {
		snprintf(err, errlen, "template \"%.*s\" is over %d bytes",
		    (int)len, tok, CHANGES_TAG_MAX);
		return -1;
	}
	while (i < len) {
		if (tok[i] == '}' || (unsigned char)tok[i] < 0x21 ||
		    (unsigned char)tok[i] > 0x7e) {
			snprintf(err, errlen, "template \"%.*s\": unexpected "
			    "byte 0x%02x", (int)len, tok,
			    (unsigned char)tok[i]);
			return -1;
		}
		if (tok[i] == '{') {
			for (j = i + 1; j < len && tok[j] != '}' &&
			    tok[j] != '{'; j++)
				;
			if (j == len || tok[j] != '}' || j == i + 1) {
				snprintf(err, errlen, "template \"%.*s\": a "
				    "'{' without a column name and '}'",
				    (int)len, tok);
				return -1;
			}
			if (add_part(tp, tok + i + 1, j - i - 1, 1) == -1)
				goto oom;
			i = j + 1;
			continue;
		}
		j = i + strcspn(tok + i, "{}");
		if (j > len)
			j = len;
		if (add_part(tp, tok + i, j - i, 0) == -1)
			goto oom;
		i = j;
	}
	if (template_broad(tp, tok, len, ttag) == -1)
		goto oom;
	return 0;
oom:
	snprintf(err, errlen, "out of memory");
	return -1;
}

/* "table" or "schema.table" as "schema.table", and T. */
static int
rule_table(const char *name, struct rule *r, char *ttag, char *err,
    size_t errlen)
{
	const char *dot = strchr(name, '.');
	char schema[CHANGES_NAME_MAX + 1];
	const char *table = dot != NULL ? dot + 1 : name;
	size_t slen = dot != NULL ? (size_t)(dot - name) : strlen("public");

	if (slen == 0 || slen > CHANGES_NAME_MAX || *table == '\0' ||
	    strlen(table) > CHANGES_NAME_MAX || strchr(table, '.') != NULL) {
		snprintf(err, errlen, "table \"%s\" is not \"table\" or "
		    "\"schema.table\"", name);
		return -1;
	}
	memcpy(schema, dot != NULL ? name : "public", slen);
	schema[slen] = '\0';
	snprintf(r->table, sizeof(r->table), "%s.%s", schema, table);
	if (table_tag(schema, table, ttag) == -1) {
		snprintf(err, errlen, "table \"%s\": its tag is over %d bytes",
		    name, CHANGES_TAG_MAX);
		return -1;
	}
	return 0;
}

static int
rule_parse(struct rule *r, const struct changes_rule *cr, char *err,
    size_t errlen)
{
	char ttag[CHANGES_TAG_MAX + 1], why[CHANGES_ERR_MAX];
	const char *p = cr->tags;
	size_t len;

	if (rule_table(cr->table, r, ttag, err, errlen) == -1)
		return -1;
	r->hard = cr->hard;
	while (*(p += strspn(p, TEMPLATE_SEPARATORS)) != '\0') {
		len = strcspn(p, TEMPLATE_SEPARATORS);
		if (r->n == RULES_TEMPLATES_MAX) {
			snprintf(err, errlen, "rule for %s: over %d templates",
			    cr->table, RULES_TEMPLATES_MAX);
			return -1;
		}
		if (template_parse(&r->tmpl[r->n++], p, len, ttag, why,
		    sizeof(why)) == -1) {
			snprintf(err, errlen, "rule for %s: %s", cr->table,
			    why);
			return -1;
		}
		p += len;
	}
	if (r->n == 0) {
		snprintf(err, errlen, "rule for %s has no tags", cr->table);
		return -1;
	}
	return 0;
}

/* ---- rows --------------------------------------------------------------- */

/* What a tuple says of a row. kind: 'N' a new row, 'O' a whole old row,
 * 'K' the replica identity's columns of an old row. An UNCHANGED value
 * of a new row is the old row's (from, if known). */
static void
image(struct cell *c, const struct pgoutput_relation *rel,
    const struct pgoutput_tuple *tu, char kind, const struct cell *from)
{
	int i;

	for (i = 0; i < rel->ncols; i++) {
		const struct pgoutput_value *v = &tu->cols[i];

		memset(&c[i], 0, sizeof(c[i]));
		if (kind == 'K' && !rel->cols[i].key)
			c[i].state = CELL_UNKNOWN;
		else if (v->kind == PGOUTPUT_TEXT)
			c[i] = (struct cell){ CELL_TEXT, v->data, v->len };
		else if (v->kind == PGOUTPUT_NULL)
			c[i].state = CELL_NULL;
		else if (from != NULL)
			c[i] = from[i];
		else
			c[i].state = CELL_UNKNOWN;
	}
}

/* An update without an old row: its key is the new row's, the rest
 * unknown. */
static void
image_key_of(struct cell *c, const struct pgoutput_relation *rel,
    const struct cell *new)
{
	int i;

	for (i = 0; i < rel->ncols; i++) {
		if (rel->cols[i].key)
			c[i] = new[i];
		else
			c[i] = (struct cell){ CELL_UNKNOWN, NULL, 0 };
	}
}

static int
same_cell(const struct cell *a, const struct cell *b)
{
	return a->state == b->state && (a->state != CELL_TEXT ||
	    (a->len == b->len && memcmp(a->data, b->data, a->len) == 0));
}

/* Does a row have a usable key: REPLICA IDENTITY DEFAULT or INDEX? */
static int
has_key(const struct pgoutput_relation *rel)
{
	int i;

	if (rel->identity == 'f' || rel->identity == 'n')
		return 0;
	for (i = 0; i < rel->ncols; i++)
		if (rel->cols[i].key)
			return 1;
	return 0;
}

static int
key_changed(const struct pgoutput_relation *rel, const struct cell *old,
    const struct cell *new)
{
	int i;

	for (i = 0; i < rel->ncols; i++)
		if (rel->cols[i].key && !same_cell(&old[i], &new[i]))
			return 1;
	return 0;
}

static void
emit(struct rules *r, const char *tag, const char *broad)
{
	r->emit(tag, broad, r->emit_hard, r->arg);
}

/* The default rule: T:K (broad: its family T:*), then T itself when
 * asked. */
static void
default_tags(struct rules *r, const struct pgoutput_relation *rel,
    const struct cell *c, int with_table)
{
	char tag[CHANGES_TAG_MAX + 1];
	int i, n, len = (int)strlen(r->table_tag), first = 1;

	if (!has_key(rel)) {
		emit(r, r->table_tag, r->table_tag);
		return;
	}
	memcpy(tag, r->table_tag, (size_t)len);
	tag[len++] = ':';
	for (i = 0; i < rel->ncols; i++) {
		if (!rel->cols[i].key)
			continue;
		if (c[i].state != CELL_TEXT ||
		    (!first && len == CHANGES_TAG_MAX))
			break;
		if (!first)
			tag[len++] = ',';
		first = 0;
		if ((n = rules_escape(c[i].data, c[i].len, tag + len,
		    sizeof(tag) - (size_t)len)) == -1)
			break;
		len += n;
	}
	if (i < rel->ncols)	/* a value unknown, or the tag too long */
		with_table = 1;
	else
		emit(r, tag, r->family);
	if (with_table)
		emit(r, r->table_tag, r->table_tag);
}

static int
column_index(const struct pgoutput_relation *rel, const char *name)
{
	int i;

	for (i = 0; i < rel->ncols; i++)
		if (strcmp(rel->cols[i].name, name) == 0)
			return i;
	return -1;
}

/* One template over a row: its tag, its broad tag if a value is not
 * known (or makes the tag too long), none if one is NULL. */
static void
template_tag(struct rules *r, const struct template *tp,
    const struct pgoutput_relation *rel, const struct cell *c)
{
	char tag[CHANGES_TAG_MAX + 1];
	size_t len = 0, room;
	int i, k, n;

	for (i = 0; i < tp->nparts; i++) {
		const struct part *pt = &tp->parts[i];

		room = sizeof(tag) - len;
		if (!pt->column) {
			n = snprintf(tag + len, room, "%s", pt->text);
			if (n < 0 || (size_t)n >= room)
				goto broad;
			len += (size_t)n;
			continue;
		}
		if ((k = column_index(rel, pt->text)) == -1 ||
		    c[k].state == CELL_UNKNOWN)
			goto broad;
		if (c[k].state == CELL_NULL)
			return;
		n = rules_escape(c[k].data, c[k].len, tag + len, room);
		if (n == -1)
			goto broad;
		len += (size_t)n;
	}
	emit(r, tag, tp->broad);
	return;
broad:
	emit(r, tp->broad, tp->broad);
}

/* The tags of one row: its table's rule's, or the default ones. */
static void
row_tags(struct rules *r, const struct rule *ru,
    const struct pgoutput_relation *rel, const struct cell *c, int with_table)
{
	int i;

	r->emit_hard = ru != NULL ? ru->hard : r->hard;
	if (ru == NULL) {
		default_tags(r, rel, c, with_table);
		return;
	}
	for (i = 0; i < ru->n; i++)
		template_tag(r, &ru->tmpl[i], rel, c);
}

static const struct rule *
rule_of(const struct rules *r, const struct pgoutput_relation *rel)
{
	char name[QUALIFIED_MAX + 1];

	snprintf(name, sizeof(name), "%s.%s", rel->schema, rel->name);
	return dict_get(r->byname, name);
}

/* Sets T and its family for rel; -1 if even T is too long. */
static int
set_table(struct rules *r, const struct pgoutput_relation *rel, char *err,
    size_t errlen)
{
	int n;

	if ((n = table_tag(rel->schema, rel->name, r->table_tag)) != -1) {
		memcpy(r->family, r->table_tag, (size_t)n + 1);
		if ((size_t)n + sizeof(":" CHANGES_FAMILY) - 1 <= CHANGES_TAG_MAX)
			memcpy(r->family + n, ":" CHANGES_FAMILY,
			    sizeof(":" CHANGES_FAMILY));
		return 0;
	}
	snprintf(err, errlen, "%s.%s: its tag would be over %d bytes",
	    rel->schema, rel->name, CHANGES_TAG_MAX);
	return -1;
}

/* ---- changes ------------------------------------------------------------ */

/*
 * An insert purges the new row's tags, a delete the old row's, each with
 * T. An update purges the new row's and the old row's (the same ones
 * unless a value changed), with T only if its key changed.
 */
static void
row_change(struct rules *r, const struct pgoutput_event *ev)
{
	const struct pgoutput_relation *rel = ev->rel;
	const struct rule *ru = rule_of(r, rel);

	switch (ev->kind) {
	case PGOUTPUT_INSERT:
		image(r->new, rel, ev->new, 'N', NULL);
		row_tags(r, ru, rel, r->new, 1);
		break;
	case PGOUTPUT_DELETE:
		image(r->old, rel, ev->old, ev->old_kind, NULL);
		row_tags(r, ru, rel, r->old, 1);
		break;
	default:	/* UPDATE */
		if (ev->old != NULL)
			image(r->old, rel, ev->old, ev->old_kind, NULL);
		image(r->new, rel, ev->new, 'N', ev->old != NULL ? r->old :
		    NULL);
		if (ev->old == NULL)
			image_key_of(r->old, rel, r->new);
		row_tags(r, ru, rel, r->new, 0);
		row_tags(r, ru, rel, r->old, key_changed(rel, r->old, r->new));
		break;
	}
}

/* A truncate purges each table's broad tags: T, or its rule's. */
static int
truncate_tables(struct rules *r, const struct pgoutput_event *ev, char *err,
    size_t errlen)
{
	const struct rule *ru;
	int i, k;

	for (i = 0; i < ev->nrels; i++) {
		if (set_table(r, ev->rels[i], err, errlen) == -1)
			return -1;
		ru = rule_of(r, ev->rels[i]);
		r->emit_hard = ru != NULL ? ru->hard : r->hard;
		if (ru == NULL) {
			emit(r, r->table_tag, r->table_tag);
			continue;
		}
		for (k = 0; k < ru->n; k++)
			emit(r, ru->tmpl[k].broad, ru->tmpl[k].broad);
	}
	return 0;
}

int
rules_change(struct rules *r, const struct pgoutput_event *ev,
    rules_emit_cb *cb, void *arg, char *err, size_t errlen)
{
	int rc = 0;

	assert(r->magic == RULES_MAGIC);
	r->emit = cb;
	r->arg = arg;
	if (ev->kind == PGOUTPUT_TRUNCATE)
		rc = truncate_tables(r, ev, err, errlen);
	else if ((rc = set_table(r, ev->rel, err, errlen)) == 0)
		row_change(r, ev);
	r->emit = NULL;
	r->arg = NULL;
	return rc;
}

int
rules_relation(const struct rules *r, const struct pgoutput_relation *rel,
    char *err, size_t errlen)
{
	const struct rule *ru = rule_of(r, rel);
	const struct part *pt;
	int i, k;

	if (ru == NULL && !has_key(rel)) {
		snprintf(err, errlen, "%s.%s has REPLICA IDENTITY %s and no "
		    "rule: its changes purge its table's tag only",
		    rel->schema, rel->name, rel->identity == 'f' ? "FULL" :
		    rel->identity == 'n' ? "NOTHING" : "without columns");
		return 1;
	}
	for (i = 0; ru != NULL && i < ru->n; i++) {
		for (k = 0; k < ru->tmpl[i].nparts; k++) {
			pt = &ru->tmpl[i].parts[k];
			if (!pt->column || column_index(rel, pt->text) != -1)
				continue;
			snprintf(err, errlen, "the rule for %s names column "
			    "%s, which the table does not have or publish: "
			    "its broad tag %s stands in", ru->table, pt->text,
			    ru->tmpl[i].broad);
			return 1;
		}
	}
	return 0;
}

/* ---- the rules ---------------------------------------------------------- */

static int
rules_parse(struct rules *r, const struct changes_rule *rules, size_t nrules,
    char *err, size_t errlen)
{
	size_t i;

	if (nrules > 0 && (r->v = calloc(nrules, sizeof(*r->v))) == NULL)
		goto oom;
	for (i = 0; i < nrules; i++) {
		r->n = i + 1;
		if (rule_parse(&r->v[i], &rules[i], err, errlen) == -1)
			return -1;
		if (dict_get(r->byname, r->v[i].table) != NULL) {
			snprintf(err, errlen, "two rules for %s",
			    r->v[i].table);
			return -1;
		}
		if (dict_set(r->byname, r->v[i].table, &r->v[i]) == -1)
			goto oom;
	}
	return 0;
oom:
	snprintf(err, errlen, "out of memory");
	return -1;
}

struct rules *
rules_new(const struct changes_rule *rules, size_t nrules, int hard, char *err,
    size_t errlen)
{
	struct rules *r;

	if ((r = calloc(1, sizeof(*r))) == NULL)
		goto oom;
	r->magic = RULES_MAGIC;
	r->hard = hard;
	r->byname = dict_new();
	r->old = calloc(PGOUTPUT_COLUMNS_MAX, sizeof(*r->old));
	r->new = calloc(PGOUTPUT_COLUMNS_MAX, sizeof(*r->new));
	if (r->byname == NULL || r->old == NULL || r->new == NULL)
		goto oom;
	if (rules_parse(r, rules, nrules, err, errlen) == -1) {
		rules_free(&r);
		return NULL;
	}
	return r;
oom:
	snprintf(err, errlen, "out of memory");
	rules_free(&r);
	return NULL;
}

void
rules_free(struct rules **rp)
{
	struct rules *r = *rp;
	size_t i;
	int k;

	if (r == NULL)
		return;
	*rp = NULL;
	assert(r->magic == RULES_MAGIC);
	for (i = 0; i < r->n; i++)
		for (k = 0; k < r->v[i].n; k++)
			template_clear(&r->v[i].tmpl[k]);
	free(r->v);
	dict_free(&r->byname);
	free(r->old);
	free(r->new);
	r->magic = 0;
	free(r);
}
