/* SPDX-License-Identifier: MIT */
/*
 * common/log.c: a message that quotes what a client sent cannot forge or
 * break a line of the error log: control bytes are written as \xHH.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "tests/unit/unit.h"

#define READ_MAX	4096

static void
t_control_bytes_are_escaped(void)
{
	char path[] = "/tmp/corral-test-log-XXXXXX", err[256], got[READ_MAX];
	int fd = mkstemp(path);
	FILE *f;
	size_t n;

	CHECK(fd != -1);
	close(fd);
	CHECK(log_open(path, err, sizeof(err)) == 0);
	log_info("target /a\rb\tc\x01\x7f\xc3\xa9 end");
	log_close();
	CHECK((f = fopen(path, "r")) != NULL);
	n = fread(got, 1, sizeof(got) - 1, f);
	fclose(f);
	unlink(path);
	got[n] = '\0';
	CHECK(strstr(got, "target /a\\x0db\\x09c\\x01\\x7f\xc3\xa9 end\n") != NULL);
	CHECK(strchr(got, '\n') == got + n - 1);	/* one line */
}

int
main(void)
{
	RUN(t_control_bytes_are_escaped);
	return unit_exit();
}
