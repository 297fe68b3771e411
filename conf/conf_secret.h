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

/* Reads the secret name holds into out (outlen bytes, NUL-terminated).
 * 0, or -1 with why in err. */
int	secret_read(const char *name, char *out, size_t outlen, char *err,
	    size_t errlen);

#endif
