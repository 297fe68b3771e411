/* SPDX-License-Identifier: MIT */
#ifndef PROXY_DASHBOARD_H
#define PROXY_DASHBOARD_H

/* The admin dashboard (GET /): proxy/dashboard.html, turned into this
 * array at build time by the Makefile (build/gen/dashboard.c). */

#include <stddef.h>

extern const unsigned char dashboard_html[];
extern const size_t dashboard_html_len;

#endif
