/* SPDX-License-Identifier: MIT */
/*
 * RFC 8941 section 4.2, the parsing algorithms, for a Dictionary: the
 * field value is one Dictionary or it is not valid at all (then a
 * targeted cache-control field is ignored whole, RFC 9213 2.1).
 */

#include "proxy/proxy_sf.h"

#include <string.h>

#define SF_INTEGER_DIGITS	15
#define SF_DECIMAL_INT_DIGITS	12
#define SF_DECIMAL_FRAC_DIGITS	3

static int
is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static int
is_lcalpha(int c)
{
	return c >= 'a' && c <= 'z';
}

static int
is_alpha(int c)
{
	return is_lcalpha(c) || (c >= 'A' && c <= 'Z');
}

static int
is_tchar(int c)
{
	return is_alpha(c) || is_digit(c) ||
	    (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static int
is_base64(int c)
{
	return is_alpha(c) || is_digit(c) || c == '+' || c == '/' || c == '=';
}

static void
skip_sp(const char **p)
{
	while (**p == ' ')
		(*p)++;
}

static void
skip_ows(const char **p)
{
	while (**p == ' ' || **p == '\t')
		(*p)++;
}

/* key = ( lcalpha / "*" ) *( lcalpha / DIGIT / "_" / "-" / "." / "*" ) */
static int
parse_key(const char **p, const char **key, size_t *len)
{
	const char *s = *p;

	if (!is_lcalpha(*s) && *s != '*')
		return -1;
	while (is_lcalpha(*s) || is_digit(*s) || (*s != '\0' &&
	    strchr("_-.*", *s) != NULL))
		s++;
	*key = *p;
	*len = (size_t)(s - *p);
	*p = s;
	return 0;
}

/* sf-integer / sf-decimal (4.2.4) */
static int
parse_number(const char **p, struct sf_member *m)
{
	const char *s = *p;
	int neg = 0, ndig = 0, frac = -1;
	int64_t v = 0;

	if (*s == '-') {
		neg = 1;
		s++;
	}
	if (!is_digit(*s))
		return -1;
	for (; is_digit(*s) || (*s == '.' && frac < 0); s++) {
		if (*s == '.') {
			if (ndig > SF_DECIMAL_INT_DIGITS)
				return -1;
			frac = 0;
			continue;
		}
		if (frac >= 0 && ++frac > SF_DECIMAL_FRAC_DIGITS)
			return -1;
		if (frac < 0 && ++ndig > SF_INTEGER_DIGITS)
			return -1;
		if (frac < 0)
			v = v * 10 + (*s - '0');
	}
	if (frac == 0)
		return -1;		/* "1." */
	m->type = frac > 0 ? SF_DECIMAL : SF_INTEGER;
	m->integer = neg ? -v : v;
	*p = s;
	return 0;
}

/* sf-string (4.2.5): printable ASCII; only \" and \\ escaped. */
static int
parse_string(const char **p)
{
	const char *s = *p + 1;

	for (;; s++) {
		if (*s == '\\') {
			if (s[1] != '"' && s[1] != '\\')
				return -1;
			s++;
		} else if (*s == '"') {
			*p = s + 1;
			return 0;
		} else if (*s < 0x20 || *s > 0x7e) {
			return -1;	/* a control byte, or the end */
		}
	}
}

/* bare-item (4.2.3.1) */
static int
parse_bare_item(const char **p, struct sf_member *m)
{
	const char *s = *p;

	m->integer = 0;
	if (*s == '-' || is_digit(*s))
		return parse_number(p, m);
	m->type = *s == '"' ? SF_STRING : *s == ':' ? SF_BINARY :
	    *s == '?' ? SF_BOOLEAN : SF_TOKEN;
	if (*s == '"')
		return parse_string(p);
	if (*s == ':') {
		for (s++; is_base64(*s); s++)
			;
		if (*s != ':')
			return -1;
		*p = s + 1;
		return 0;
	}
	if (*s == '?') {
		if (s[1] != '0' && s[1] != '1')
			return -1;
		m->integer = s[1] - '0';
		*p = s + 2;
		return 0;
	}
	if (!is_alpha(*s) && *s != '*')
		return -1;
	for (s++; is_tchar(*s) || *s == ':' || *s == '/'; s++)
		;
	*p = s;
	return 0;
}

/* parameters (4.2.3.2): *( ";" *SP key [ "=" bare-item ] ) */
static int
parse_params(const char **p)
{
	struct sf_member scratch;
	const char *key;
	size_t len;

	while (**p == ';') {
		(*p)++;
		skip_sp(p);
		if (parse_key(p, &key, &len) == -1)
			return -1;
		if (**p == '=') {
			(*p)++;
			if (parse_bare_item(p, &scratch) == -1)
				return -1;
		}
	}
	return 0;
}

/* inner-list (4.2.1.2) */
static int
parse_inner_list(const char **p)
{
	struct sf_member scratch;

	(*p)++;
	for (;;) {
		skip_sp(p);
		if (**p == ')') {
			(*p)++;
			return parse_params(p);
		}
		if (parse_bare_item(p, &scratch) == -1 || parse_params(p) == -1)
			return -1;
		if (**p != ' ' && **p != ')')
			return -1;
	}
}

int
sf_dict_parse(const char *s, sf_member_fn *fn, void *arg)
{
	struct sf_member m;
	const char *p = s;

	skip_sp(&p);
	if (*p == '\0')
		return 0;		/* an empty Dictionary */
	for (;;) {
		if (parse_key(&p, &m.key, &m.key_len) == -1)
			return -1;
		if (*p == '=') {
			p++;
			if (*p == '(') {
				m.type = SF_INNER_LIST;
				m.integer = 0;
				if (parse_inner_list(&p) == -1)
					return -1;
			} else if (parse_bare_item(&p, &m) == -1 ||
			    parse_params(&p) == -1) {
				return -1;
			}
		} else {
			m.type = SF_BOOLEAN;	/* a bare key is true */
			m.integer = 1;
			if (parse_params(&p) == -1)
				return -1;
		}
		if (fn(&m, arg) == -1)
			return -1;
		skip_ows(&p);
		if (*p == '\0')
			return 0;
		if (*p != ',')
			return -1;
		p++;
		skip_ows(&p);
		if (*p == '\0')
			return -1;	/* a trailing comma */
	}
}
