/* SPDX-License-Identifier: MIT */
/*
 * Secret files (conf_secret.h): where a name points, opening it only if
 * others may not read it, and reading one line from it without ever
 * showing it.
 *
 * Calls nothing in Corral. Called by conf.c, conf_admin.c and
 * proxy_tls.c (a TLS key is a secret file of many lines).
 */

#include "conf/conf_secret.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf/conf.h"

#define OTHERS_MAY		(S_IROTH | S_IWOTH)

int
secret_resolve(const char *name, char *path, size_t pathlen, char *err,
    size_t errlen)
{
	const char *dir = getenv(SECRET_CREDENTIALS_ENV);
	size_t plen = strlen(SECRET_CREDENTIALS_PREFIX);

	if (name[0] == '/') {
		snprintf(path, pathlen, "%s", name);
		return 0;
	}
	if (strncmp(name, SECRET_CREDENTIALS_PREFIX, plen) == 0)
		name += plen;
	if (name[0] == '\0' || strchr(name, '/') != NULL ||
	    strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
		snprintf(err, errlen, "%s is neither an absolute path nor a "
		    "credential name", name);
		return -1;
	}
	if (dir == NULL || dir[0] != '/') {
		snprintf(err, errlen, "%s is a credential name but $%s is not "
		    "set (give an absolute path, or LoadCredential=%s:... in the "
		    "unit)", name, SECRET_CREDENTIALS_ENV, name);
		return -1;
	}
	if ((size_t)snprintf(path, pathlen, "%s/%s", dir, name) >= pathlen) {
		snprintf(err, errlen, "$%s/%s is too long a path",
		    SECRET_CREDENTIALS_ENV, name);
		return -1;
	}
	return 0;
}

/* The secret in buf[0..len): one line, its newline dropped. 0, or -1
 * with why (path named, content never) in err. */
static int
one_line(const char *path, char *buf, size_t len, char *err, size_t errlen)
{
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
		len--;
	buf[len] = '\0';
	if (len == 0) {
		snprintf(err, errlen, "%s is empty", path);
		return -1;
	}
	if (memchr(buf, '\0', len) != NULL || strpbrk(buf, "\r\n") != NULL) {
		snprintf(err, errlen, "%s holds more than one line (or a NUL "
		    "byte): it must hold the secret alone", path);
		return -1;
	}
	return 0;
}

int
secret_open(const char *name, enum secret_group group, char *path,
    size_t pathlen, char *err, size_t errlen)
{
	struct stat st;
	int fd;

	if (secret_resolve(name, path, pathlen, err, errlen) == -1)
		return -1;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) == -1) {
		snprintf(err, errlen, "cannot open %s: %s", path,
		    strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s is not a regular file", path);
		goto fail;
	}
	if (st.st_mode & OTHERS_MAY) {
		snprintf(err, errlen, "%s may be read or written by others "
		    "(mode %04o); chmod o-rwx it", path,
		    (unsigned)(st.st_mode & 07777));
		goto fail;
	}
	if (group == SECRET_GROUP_READS && (st.st_mode & S_IWGRP)) {
		snprintf(err, errlen, "%s may be written by its group (mode "
		    "%04o); chmod g-w it", path, (unsigned)(st.st_mode & 07777));
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return -1;
}

int
secret_fill(int fd, const char *path, char *buf, size_t cap, size_t *len,
    char *err, size_t errlen)
{
	ssize_t got;

	*len = 0;
	while (*len < cap && (got = read(fd, buf + *len, cap - *len)) != 0) {
		if (got == -1 && errno == EINTR)
			continue;
		if (got == -1) {
			snprintf(err, errlen, "cannot read %s: %s", path,
			    strerror(errno));
			return -1;
		}
		*len += (size_t)got;
	}
	return 0;
}

int
secret_read(const char *name, char *out, size_t outlen, char *err,
    size_t errlen)
{
	char path[CONF_PATH_MAX], buf[CONF_SECRET_MAX + 2];
	size_t len = 0;
	int fd, rc = -1;

	if ((fd = secret_open(name, SECRET_GROUP_WRITES, path, sizeof(path),
	    err, errlen)) == -1)
		return -1;
	if (secret_fill(fd, path, buf, sizeof(buf) - 1, &len, err,
	    errlen) == -1)
		goto done;
	if (one_line(path, buf, len, err, errlen) == -1)
		goto done;
	if (strlen(buf) >= outlen) {
		snprintf(err, errlen, "%s holds more than %zu bytes", path,
		    outlen - 1);
		goto done;
	}
	memcpy(out, buf, strlen(buf) + 1);
	rc = 0;
done:
	explicit_bzero(buf, sizeof(buf));
	close(fd);
	return rc;
}
