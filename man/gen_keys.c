/* SPDX-License-Identifier: MIT */
/*
 * Prints the configuration keys as man(7) paragraphs, from the same table
 * that corral -h prints: the Makefile puts them into corral.conf(5).
 */

#include <stdio.h>

#include "conf/conf.h"

int
main(void)
{
	conf_dump_keys(stdout, CONF_DUMP_MAN);
	return fflush(stdout) == 0 ? 0 : 1;
}
