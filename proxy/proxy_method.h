/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_METHOD_H
#define PROXY_PROXY_METHOD_H

/* A request's method, as a bit (a set of them is an allowed list). */
enum hmethod {
	HM_GET = 1 << 0,
	HM_HEAD = 1 << 1,
	HM_POST = 1 << 2,
	HM_PUT = 1 << 3,
	HM_DELETE = 1 << 4,
	HM_OPTIONS = 1 << 5,
	HM_PATCH = 1 << 6,
	HM_OTHER = 1 << 7
};

#endif
