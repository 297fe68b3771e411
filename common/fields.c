/* SPDX-License-Identifier: MIT */
/*
 * Fields by what they are (fields.h). Pure: calls nothing of Corral.
 */

#include "common/fields.h"

#include <string.h>
#include <strings.h>

#include "common/util.h"

static const char *const hop_by_hop[] = {
	"Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Proxy-Connection", "TE", "Trailer",
	"Transfer-Encoding", "Upgrade",
};

const char *const field_credentials[] = {
	"Authorization", "Cookie", "Proxy-Authorization",
};
const size_t field_ncredentials = ARRAY_LEN(field_credentials);

const char *
field_hop_by_hop(const char *name)
{
	for (size_t i = 0; i < ARRAY_LEN(hop_by_hop); i++)
		if (strcasecmp(name, hop_by_hop[i]) == 0)
			return hop_by_hop[i];
	return NULL;
}

int
field_is_credential(const char *name, size_t n)
{
	for (size_t i = 0; i < field_ncredentials; i++)
		if (strlen(field_credentials[i]) == n &&
		    strncasecmp(name, field_credentials[i], n) == 0)
			return 1;
	return 0;
}
