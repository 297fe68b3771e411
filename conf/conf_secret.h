/* SPDX-License-Identifier: MIT */
#ifndef CONF_CONF_SECRET_H
#define CONF_CONF_SECRET_H

/*
 * Secret files: a password kept out of the configuration file, read when
 * the configuration is loaded (at start and on each reload).
 *
 * A name is an absolute path, or a systemd credential: a plain name (or
 * "$CREDENTIALS_DIRECTORY/name", as systemd's documentation writes it)
 * read from the directory $CREDENTIALS_DIRECTORY names, where
 * LoadCredential= puts it. The file holds the secret on one line; a
 * trailing newline (LF or CRLF) is not part of it. A file that others
 * may read or write is refused: a secret anyone on the host can read is
 * not one. Errors name the file, never its content.
 */

#include <stddef.h>

#define SECRET_CREDENTIALS_ENV	"CREDENTIALS_DIRECTORY"
#define SECRET_CREDENTIALS_PREFIX	"$" SECRET_CREDENTIALS_ENV "/"

/*
 * What a secret file's group may do. Never others: a file others may read
 * or write is refused. The group may read it (0640, root and Corral's
 * group; a systemd credential's ACL also shows as the group's bits, 0440).
 */
enum secret_group {
	SECRET_GROUP_WRITES,	/* a password: a wrong one only locks out */
	SECRET_GROUP_READS	/* admin tokens: one written in would let in */
};

/* The file name names: itself when absolute, else a credential in
 * $CREDENTIALS_DIRECTORY; into path (pathlen bytes). 0, or -1 with why
 * in err. */
int	secret_resolve(const char *name, char *path, size_t pathlen, char *err,
	    size_t errlen);

/* Opens the file name names, read-only, refusing one that is not regular
 * or that others (or, SECRET_GROUP_READS, its group) may write; its path
 * into path (pathlen bytes). The descriptor, or -1 with why in err. */
int	secret_open(const char *name, enum secret_group group, char *path,
	    size_t pathlen, char *err, size_t errlen);

/* Reads what fd holds, to its end or cap bytes, into buf; how many bytes
 * into *len (cap: the file may hold more). path names it in err. 0, or -1
 * with why in err. */
int	secret_fill(int fd, const char *path, char *buf, size_t cap,
	    size_t *len, char *err, size_t errlen);

/* Reads the secret name holds into out (outlen bytes, NUL-terminated).
 * 0, or -1 with why in err. */
int	secret_read(const char *name, char *out, size_t outlen, char *err,
	    size_t errlen);

#endif
