/* SPDX-License-Identifier: MIT */
/*
 * [server] admin_token_file: the Bearer tokens of the admin API, read
 * whenever the configuration is loaded (at start and on every reload, so
 * that a reload with a bad file keeps the running tokens). One token a
 * line, alone (every scope) or followed by "read"; blank lines and '#'
 * comments. A token is CONF_TOKEN_MIN..CONF_TOKEN_MAX characters of RFC
 * 6750's b64token (letters, digits, "-._~+/", then '=' padding). The file
 * is opened as conf_secret.h opens a password file (an absolute path, or
 * a bare name: a systemd credential), or a relative path with a '/' next
 * to the configuration file; it must be a regular file that others may
 * neither read nor write, nor its group write. Messages name the file
 * and the line, never a token.
 */

#include <ctype.h>
#include <errno.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf/conf.h"
#include "conf/conf_secret.h"

#define TOKEN_LINE_MAX		512	/* bytes of one line of the file */
#define SCOPE_WORD_READ		"read"
#define SCOPE_WORD_ALL		"all"

struct reader {
	FILE		*errs;
	const char	*conf_path;
	int		 conf_line;
	char		 name[CONF_PATH_MAX];	/* as secret_open() takes it */
	char		 path[CONF_PATH_MAX];	/* the token file's */
	int		 nerr;
};

static void	say(struct reader *, int, const char *, ...)
		    __attribute__((format(printf, 3, 4)));

/* "tokens:3: what" for a line of the token file (line > 0), else
 * "corral.conf:12: admin_token_file: what". */
static void
say(struct reader *r, int line, const char *fmt, ...)
{
	va_list ap;

	r->nerr++;
	if (r->errs == NULL)
		return;
	if (line > 0)
		fprintf(r->errs, "%s:%d: ", r->path, line);
	else if (r->conf_line > 0)
		fprintf(r->errs, "%s:%d: admin_token_file: ", r->conf_path,
		    r->conf_line);
	else
		fprintf(r->errs, "%s: admin_token_file: ", r->conf_path);
	va_start(ap, fmt);
	vfprintf(r->errs, fmt, ap);
	va_end(ap);
	fputc('\n', r->errs);
}

/* RFC 6750 2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" /
 * "+" / "/" ) *"=" */
static int
is_b64token(const char *s, size_t n)
{
	size_t i = 0;

	while (i < n && (isalnum((unsigned char)s[i]) ||
	    strchr("-._~+/", s[i]) != NULL))
		i++;
	if (i == 0)
		return 0;
	while (i < n && s[i] == '=')
		i++;
	return i == n;
}

/* An absolute path, a credential's name (bare, or after
 * "$CREDENTIALS_DIRECTORY/") or a relative path with a '/', which names a
 * file next to the configuration file. 0, or -1 when the path is too
 * long. */
static int
resolve(struct reader *r, const char *file)
{
	char dir[CONF_PATH_MAX], cwd[CONF_PATH_MAX];
	const char *base;
	int n;

	if (file[0] == '/' || strchr(file, '/') == NULL ||
	    strncmp(file, SECRET_CREDENTIALS_PREFIX,
	    strlen(SECRET_CREDENTIALS_PREFIX)) == 0) {
		snprintf(r->name, sizeof(r->name), "%s", file);
		return 0;
	}
	snprintf(dir, sizeof(dir), "%s", r->conf_path);
	base = dirname(dir);
	/* The file is opened by its absolute path only (conf_secret.c):
	 * a configuration named relative to the working directory (-c
	 * corral.conf) has its directory taken from there. */
	if (base[0] == '/')
		n = snprintf(r->name, sizeof(r->name), "%s/%s", base, file);
	else if (getcwd(cwd, sizeof(cwd)) != NULL)
		n = snprintf(r->name, sizeof(r->name), "%s/%s/%s", cwd, base,
		    file);
	else
		return -1;
	return n > 0 && (size_t)n < sizeof(r->name) ? 0 : -1;
}

/* One line's token and scope: 0, or -1 (said why). */
static int
parse_line(struct reader *r, int line, char *s, struct conf_token *t)
{
	const char *words[3];
	size_t lens[3];
	int n = 0;

	for (char *p = s + strspn(s, " \t"); *p != '\0' && n < 3;
	    p += strspn(p, " \t")) {
		words[n] = p;
		lens[n] = strcspn(p, " \t");
		p += lens[n++];
	}
	if (n == 3) {
		say(r, line, "a token and at most one scope (%s) a line",
		    SCOPE_WORD_READ);
		return -1;
	}
	if (lens[0] < CONF_TOKEN_MIN || lens[0] > CONF_TOKEN_MAX ||
	    !is_b64token(words[0], lens[0])) {
		say(r, line, "a token is %d to %d characters of letters, digits "
		    "and -._~+/ (then = padding): this one is %zu characters%s",
		    CONF_TOKEN_MIN, CONF_TOKEN_MAX, lens[0],
		    is_b64token(words[0], lens[0]) ? "" : " with others");
		return -1;
	}
	t->scope = SCOPE_ALL;
	if (n == 2 && lens[1] == strlen(SCOPE_WORD_READ) &&
	    strncmp(words[1], SCOPE_WORD_READ, lens[1]) == 0)
		t->scope = SCOPE_READ;
	else if (n == 2 && (lens[1] != strlen(SCOPE_WORD_ALL) ||
	    strncmp(words[1], SCOPE_WORD_ALL, lens[1]) != 0)) {
		say(r, line, "unknown scope \"%.*s\" (%s, %s, or none for all)",
		    (int)(lens[1] > 32 ? 32 : lens[1]), words[1], SCOPE_WORD_READ,
		    SCOPE_WORD_ALL);
		return -1;
	}
	memset(t->text, 0, sizeof(t->text));
	memcpy(t->text, words[0], lens[0]);
	t->len = lens[0];
	return 0;
}

/* Adds line's token unless it is bad or a repeat. */
static void
add_token(struct reader *r, struct conf *c, int line, char *s,
    int lines[CONF_TOKENS_MAX])
{
	struct conf_token t;

	if (parse_line(r, line, s, &t) == -1)
		return;
	for (int i = 0; i < c->nadmin_tokens; i++)
		if (c->admin_tokens[i].len == t.len &&
		    memcmp(c->admin_tokens[i].text, t.text, t.len) == 0) {
			say(r, line, "the same token as line %d", lines[i]);
			return;
		}
	if (c->nadmin_tokens == CONF_TOKENS_MAX) {
		say(r, line, "more than %d tokens", CONF_TOKENS_MAX);
		return;
	}
	lines[c->nadmin_tokens] = line;
	c->admin_tokens[c->nadmin_tokens++] = t;
}

/* The token file, opened as conf_secret.h opens a secret; NULL when it
 * cannot be, said why. */
static FILE *
open_tokens(struct reader *r)
{
	char err[CONF_PATH_MAX + 128];
	FILE *fp;
	int fd;

	if ((fd = secret_open(r->name, SECRET_GROUP_READS, r->path,
	    sizeof(r->path), err, sizeof(err))) == -1) {
		say(r, 0, "%s%s", err, strchr(r->name, '/') == NULL &&
		    getenv(SECRET_CREDENTIALS_ENV) == NULL ? "; ./NAME names a "
		    "file next to the configuration file" : "");
		return NULL;
	}
	if ((fp = fdopen(fd, "r")) == NULL) {
		say(r, 0, "cannot read %s: %s", r->path, strerror(errno));
		close(fd);
	}
	return fp;
}

int
conf_tokens_load(struct conf *c, const char *conf_path, int line, FILE *errs)
{
	struct reader r = { .errs = errs, .conf_path = conf_path,
	    .conf_line = line };
	char buf[TOKEN_LINE_MAX + 2], *s;
	int lines[CONF_TOKENS_MAX], n = 0;
	FILE *fp;

	c->nadmin_tokens = 0;
	if (c->admin_token_file[0] == '\0')
		return 0;
	if (resolve(&r, c->admin_token_file) == -1) {
		say(&r, 0, "the path is longer than %d bytes", CONF_PATH_MAX - 1);
		return r.nerr;
	}
	if ((fp = open_tokens(&r)) == NULL)
		return r.nerr;
	while (fgets(buf, sizeof(buf), fp) != NULL) {
		size_t len = strlen(buf);
		int ch;

		n++;
		if (len > 0 && buf[len - 1] != '\n' && !feof(fp)) {
			say(&r, n, "longer than %d bytes", TOKEN_LINE_MAX);
			while ((ch = fgetc(fp)) != EOF && ch != '\n')
				;	/* the rest of the line */
			continue;
		}
		buf[strcspn(buf, "\r\n")] = '\0';
		s = buf + strspn(buf, " \t");
		if (*s != '\0' && *s != '#')
			add_token(&r, c, n, s, lines);
	}
	if (ferror(fp))
		say(&r, 0, "cannot read %s: %s", r.path, strerror(errno));
	else if (c->nadmin_tokens == 0 && r.nerr == 0)
		say(&r, 0, "%s holds no token", r.path);
	fclose(fp);
	return r.nerr;
}

enum admin_scope
conf_token_scope(const struct conf *c, const char *s, size_t len)
{
	unsigned char given[CONF_TOKEN_MAX + 1];
	enum admin_scope found = SCOPE_NONE;

	memset(given, 0, sizeof(given));
	memcpy(given, s, len < CONF_TOKEN_MAX ? len : CONF_TOKEN_MAX);
	/* Every byte of every token is looked at, whatever matches. */
	for (int i = 0; i < c->nadmin_tokens; i++) {
		const struct conf_token *t = &c->admin_tokens[i];
		unsigned diff = (unsigned)(t->len ^ len);

		for (size_t j = 0; j < sizeof(given); j++)
			diff |= (unsigned char)t->text[j] ^ given[j];
		if (diff == 0)
			found = t->scope;
	}
	return found;
}
