/* SPDX-License-Identifier: MIT */
/*
 * What a TLS context is made from: tls_check on certificates and keys
 * made with the openssl command, each refusal's text checked whole.
 */

#include "proxy/proxy_tls.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/unit/unit.h"
#include "tests/unit/unit_tls.h"

#define ERR_LEN			1024
#define NOBODY			65534	/* uid and gid */

/* tls_check on cert and key (in dir) gives rc and says what, each '@'
 * in it standing for dir. */
static int
check_says(const char *cert, const char *key, int rc, const char *what)
{
	char err[ERR_LEN], want[ERR_LEN];
	int got = tls_check(in_dir(cert), in_dir(key), err, sizeof(err));
	size_t n = 0;

	for (; *what != '\0' && n + sizeof(dir) < sizeof(want); what++)
		if (*what == '@')
			n += (size_t)snprintf(want + n, sizeof(want) - n, "%s",
			    dir);
		else
			want[n++] = *what;
	want[n] = '\0';
	if (got != rc || strcmp(err, want) != 0) {
		printf("    %s + %s: %d \"%s\"\n", cert, key, got, err);
		return 0;
	}
	return 1;
}

static void
t_certificate_errors_name_the_file_and_what_is_wrong(void)
{
	CHECK(check_says("nope.pem", "a.key", -1,
	    "@/nope.pem: cannot open: No such file or directory"));
	CHECK(check_says("dir.pem", "a.key", -1,
	    "@/dir.pem: not a regular file"));
	CHECK(check_says("junk.pem", "a.key", -1, "@/junk.pem: no PEM "
	    "certificate in it (-----BEGIN CERTIFICATE-----)"));
	CHECK(check_says("old.pem", "old.key", -1, "@/old.pem: the "
	    "certificate expired on 2020-02-01 00:00:00 UTC"));
	CHECK(check_says("future.pem", "future.key", -1, "@/future.pem: the "
	    "certificate is not valid before 2100-01-01 00:00:00 UTC"));
	CHECK(check_says("weak.pem", "weak.key", -1, "@/weak.pem: the "
	    "certificate's RSA key of 1024 bits is too weak (RSA-2048 or "
	    "ECDSA P-256 at least)"));
	CHECK(check_says("sha1.pem", "sha1.key", -1, "@/sha1.pem: a "
	    "certificate in it is signed with too weak a digest (SHA-1 or "
	    "MD5)"));
}

static void
t_certificate_it_cannot_read_is_refused(void)
{
	char cmd[CMD_MAX];
	pid_t pid;
	int status = -1;

	snprintf(cmd, sizeof(cmd), "cp %s/a.pem %s/closed.pem && chmod 000 "
	    "%s/closed.pem", dir, dir, dir);
	CHECK(system(cmd) == 0);
	if (geteuid() != 0) {
		CHECK(check_says("closed.pem", "a.key", -1,
		    "@/closed.pem: cannot open: Permission denied"));
		return;
	}
	/* Root reads it all the same: a child that is nobody checks. */
	if ((pid = fork()) == 0)
		_exit(setgid(NOBODY) == 0 && setuid(NOBODY) == 0 &&
		    check_says("closed.pem", "a.key", -1, "@/closed.pem: "
		    "cannot open: Permission denied") ? 0 : 1);
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void
t_key_errors_name_the_file_and_never_its_content(void)
{
	CHECK(check_says("a.pem", "nope.key", -1,
	    "cannot open @/nope.key: No such file or directory"));
	CHECK(check_says("a.pem", "open.key", -1, "@/open.key may be read "
	    "or written by others (mode 0644); chmod o-rwx it"));
	CHECK(check_says("a.pem", "junk.key", -1, "@/junk.key: no PEM "
	    "private key in it (-----BEGIN PRIVATE KEY-----)"));
	CHECK(check_says("a.pem", "enc.key", -1, "@/enc.key: the key is "
	    "encrypted, and Corral takes no passphrase: decrypt it (openssl "
	    "pkey -in FILE -out NEW) into a file only Corral may read"));
	CHECK(check_says("a.pem", "other.key", -1, "@/other.key: the key "
	    "does not match the certificate in @/a.pem"));
	CHECK(check_says("a.pem", "weak.key", -1, "@/weak.key: the RSA key "
	    "of 1024 bits is too weak (RSA-2048 or ECDSA P-256 at least)"));
}

static void
t_certificate_expiring_soon_is_a_warning(void)
{
	char err[ERR_LEN];

	CHECK(tls_check(in_dir("soon.pem"), in_dir("soon.key"), err,
	    sizeof(err)) == 0);
	CHECK(strstr(err, "/soon.pem: the certificate expires on ") != NULL);
	/* 5 days less the seconds since it was made. */
	CHECK(strstr(err, " UTC, in 4 days") != NULL ||
	    strstr(err, " UTC, in 5 days") != NULL);
	CHECK(tls_check(in_dir("a.pem"), in_dir("a.key"), err,
	    sizeof(err)) == 0);
	CHECK(err[0] == '\0');
}

static void
t_files_may_be_systemd_credentials(void)
{
	char err[ERR_LEN];
	int rc;

	CHECK(setenv("CREDENTIALS_DIRECTORY", dir, 1) == 0);
	rc = tls_check("a.pem", "$CREDENTIALS_DIRECTORY/a.key", err,
	    sizeof(err));
	unsetenv("CREDENTIALS_DIRECTORY");
	CHECK(rc == 0);
	CHECK(tls_check("a.pem", "a.key", err, sizeof(err)) == -1);
	CHECK(strstr(err, "is a credential name but $CREDENTIALS_DIRECTORY "
	    "is not set") != NULL);
}

int
main(void)
{
	if (certs_make() == -1) {
		printf("FAIL setup: cannot make certificates in %s "
		    "(see gen.log)\n", dir);
		return 1;
	}
	RUN(t_certificate_errors_name_the_file_and_what_is_wrong);
	RUN(t_certificate_it_cannot_read_is_refused);
	RUN(t_key_errors_name_the_file_and_never_its_content);
	RUN(t_certificate_expiring_soon_is_a_warning);
	RUN(t_files_may_be_systemd_credentials);
	certs_remove();
	return unit_exit();
}
