/*
 * [server] admin_token_file: the Bearer tokens of the admin API, read
 * whenever the configuration is loaded (at start and on every reload, so
 * that a reload with a bad file keeps the running tokens). One token a
 * line, alone (every scope) or followed by "read"; blank lines and '#'
 * comments. A token is CONF_TOKEN_MIN..CONF_TOKEN_MAX characters of RFC
 * 6750's b64token (letters, digits, "-._~+/", then '=' padding). The file
 * must be a regular file that neither group nor others may read or
 * write. Messages name the file and the line, never a token.
 */

#include <ctype.h>
#include <errno.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "conf/conf.h"

#define TOKEN_LINE_MAX		512	/* bytes of one line of the file */
#define TOKEN_MODE_LOOSE	(S_IRWXG | S_IRWXO)	/* refused mode bits */
#define SCOPE_WORD_READ		"read"
#define SCOPE_WORD_ALL		"all"

struct reader {
	FILE		*errs;
	const char	*conf_path;
	int		 conf_line;
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

/* A relative path names a file next to the configuration file. 0, or
 * -1 when the path is too long. */
static int
resolve(struct reader *r, const char *file)
{
	char dir[CONF_PATH_MAX];
	int n;

	if (file[0] == '/') {
		snprintf(r->path, sizeof(r->path), "%s", file);
		return 0;
	}
	snprintf(dir, sizeof(dir), "%s", r->conf_path);
	n = snprintf(r->path, sizeof(r->path), "%s/%s", dirname(dir), file);
	return n > 0 && (size_t)n < sizeof(r->path) ? 0 : -1;
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

/* Refuses a file that is not regular or that others may read. 0 or -1. */
static int
check_mode(struct reader *r, FILE *fp)
{
	struct stat st;

	if (fstat(fileno(fp), &st) == -1) {
		say(r, 0, "%s: %s", r->path, strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		say(r, 0, "%s is not a regular file", r->path);
		return -1;
	}
	if ((st.st_mode & TOKEN_MODE_LOOSE) != 0) {
		say(r, 0, "%s is readable or writable by group or others (mode "
		    "%04o): chmod 600 it, as it holds secrets", r->path,
		    (unsigned)(st.st_mode & 07777));
		return -1;
	}
	return 0;
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
	if ((fp = fopen(r.path, "r")) == NULL) {
		say(&r, 0, "cannot open %s: %s", r.path, strerror(errno));
		return r.nerr;
	}
	if (check_mode(&r, fp) == -1) {
		fclose(fp);
		return r.nerr;
	}
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
