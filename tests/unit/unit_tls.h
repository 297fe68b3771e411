/* SPDX-License-Identifier: MIT */
#ifndef TESTS_UNIT_TLS_H
#define TESTS_UNIT_TLS_H

/* Certificates for the TLS tests, made with the openssl command in a
 * temporary directory, and paths in it. */

#include <stdio.h>
#include <stdlib.h>

#define DIR_MAX			64
#define PATH_LEN		128
#define CMD_MAX			8192
#define PATHS_KEPT		8	/* in_dir's results alive at once */

static char dir[DIR_MAX];

/* dir/name, in one of PATHS_KEPT static buffers. */
static inline char *
in_dir(const char *name)
{
	static char paths[PATHS_KEPT][PATH_LEN];
	static int next;
	char *p = paths[next++ % PATHS_KEPT];

	snprintf(p, PATH_LEN, "%s/%s", dir, name);
	return p;
}

/*
 * In dir: a CA; leaves a (CN corral-a) and b (corral-b) for localhost and
 * 127.0.0.1; c, signed by an intermediate, whose file holds the chain;
 * soon (5 days left), old (expired in 2020), future (valid from 2100),
 * sha1 (signed with SHA-1), weak (RSA-1024) with their keys; other.key
 * (matches nothing), enc.key (a's, encrypted), open.key (a's, mode 0644),
 * junk.pem and junk.key (no PEM), dir.pem (a directory).
 */
static const char make_certs[] =
    "set -e; exec >gen.log 2>&1\n"
    "ec='-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes'\n"
    "echo 'subjectAltName=DNS:localhost,IP:127.0.0.1' > ext.cnf\n"
    "printf 'basicConstraints=critical,CA:TRUE\\nkeyUsage=keyCertSign\\n'"
    " > inter.cnf\n"
    "printf '[ca]\\ndefault_ca=d\\n[d]\\ndatabase=index.txt\\n"
    "new_certs_dir=.\\nserial=serial\\ndefault_md=sha256\\npolicy=p\\n"
    "unique_subject=no\\n[p]\\ncommonName=supplied\\n' > ca.cnf\n"
    ": > index.txt; echo 10 > serial\n"
    "openssl req -x509 $ec -keyout ca.key -out ca.pem -subj /CN=corral-ca"
    " -days 30\n"
    "csr() { openssl req $ec -keyout $1.key -out $1.csr"
    " -subj /CN=corral-$1; }\n"
    "sign() { n=$1; shift; openssl x509 -req -in $n.csr -CA ca.pem"
    " -CAkey ca.key -extfile ext.cnf -out $n.pem \"$@\"; }\n"
    "csr a; sign a -days 30 -set_serial 161\n"
    "csr b; sign b -days 30 -set_serial 178\n"
    "csr soon; sign soon -days 5 -set_serial 3\n"
    "csr inter; openssl x509 -req -in inter.csr -CA ca.pem -CAkey ca.key"
    " -extfile inter.cnf -days 30 -set_serial 4 -out inter.pem\n"
    "csr c; openssl x509 -req -in c.csr -CA inter.pem -CAkey inter.key"
    " -extfile ext.cnf -days 30 -set_serial 5 -out c.leaf\n"
    "cat c.leaf inter.pem > c.pem\n"
    "ca() { openssl ca -batch -config ca.cnf -cert ca.pem -keyfile ca.key"
    " -in a.csr -notext -out $1.pem -startdate $2 -enddate $3;"
    " cp a.key $1.key; }\n"
    "ca old 20200101000000Z 20200201000000Z\n"
    "ca future 21000101000000Z 21010101000000Z\n"
    "sign a -days 30 -sha1 -out sha1.pem; cp a.key sha1.key\n"
    "openssl req -x509 -newkey rsa:1024 -nodes -keyout weak.key -out weak.pem"
    " -subj /CN=corral-weak -days 30\n"
    "openssl genpkey -algorithm ec -pkeyopt ec_paramgen_curve:P-256"
    " -out other.key\n"
    "openssl pkey -in a.key -aes256 -passout pass:secret -out enc.key\n"
    "echo 'no certificate here' > junk.pem; cp junk.pem junk.key\n"
    "mkdir dir.pem\n"
    "chmod 600 *.key; cp a.key open.key; chmod 644 open.key\n";

static inline int
certs_make(void)
{
	char cmd[CMD_MAX];

	snprintf(dir, sizeof(dir), "/tmp/corral-test-tls-XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	if (setenv("CORRAL_TEST_SCRIPT", make_certs, 1) == -1)
		return -1;
	snprintf(cmd, sizeof(cmd), "cd %s && sh -c \"$CORRAL_TEST_SCRIPT\"",
	    dir);
	return system(cmd) == 0 ? 0 : -1;
}

static inline void
certs_remove(void)
{
	char cmd[CMD_MAX];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	(void)system(cmd);
}

#endif
