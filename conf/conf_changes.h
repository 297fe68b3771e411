/* SPDX-License-Identifier: MIT */
#ifndef CONF_CONF_CHANGES_H
#define CONF_CONF_CHANGES_H

/*
 * Inside conf/: the [changes NAME] sections of a configuration
 * (conf_changes.c). The loader (conf.c) hands this file the section
 * headers, the per-table keys (tags.TABLE, purge.TABLE), and the
 * sections once the whole file is read; the other keys of a section are
 * rows of the key table like any.
 */

#include <stddef.h>
#include <stdio.h>

#include "conf/conf.h"

/* A "[changes NAME]" header: the new section's index (its keys then go in
 * c->changes[index], filled with the defaults here), or -1 with the
 * reason in err. */
int	conf_changes_begin(struct conf *c, const char *name, size_t len,
	    int line, char *err, size_t errlen);
/* Is name a per-table key ("tags.TABLE", "purge.TABLE")? 1, with *rc 0 or
 * -1 (the reason in err) for its value; 0 if it is another key. */
int	conf_changes_table_key(struct conf_changes *cc, const char *name,
	    const char *value, int line, int *rc, char *err, size_t errlen);
/* After the whole file: what each section's keys need together, its
 * password file read, its slot named. Writes "path:line: what" for each
 * error; their number. */
int	conf_changes_check(struct conf *c, const char *path, FILE *errs);

#endif
