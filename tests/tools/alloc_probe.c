/* SPDX-License-Identifier: MIT */
/*
 * alloc_probe: checks what alloc_count.so sees, on the glibc it runs on.
 *
 *   LD_PRELOAD=build/tools/alloc_count.so build/tools/alloc_probe
 *
 * Each test calls one function and checks the allocations and frees the
 * counter saw meanwhile: each allocator entry point counts once, and
 * glibc's functions that allocate (strdup, asprintf, fopen, ...) are seen
 * through the malloc, realloc and free they call. Built without builtins
 * (-fno-builtin), so that the compiler neither drops a malloc whose block
 * is freed unused nor turns strdup into malloc and memcpy itself.
 * Prints "PASS name" / "FAIL name: ..." (tests/unit/unit.h).
 */

#include <dlfcn.h>
#include <malloc.h>
#include <netdb.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/unit.h"

struct seen {
	unsigned long long allocs;
	unsigned long long frees;
};

static void (*read_counts)(unsigned long long *, unsigned long long *);
static void *volatile sink;

static struct seen now(void)
{
	struct seen s;

	read_counts(&s.allocs, &s.frees);
	return s;
}

static struct seen since(struct seen before)
{
	struct seen s = now();

	s.allocs -= before.allocs;
	s.frees -= before.frees;
	return s;
}

static void t_malloc_and_free_count_once(void)
{
	struct seen b = now(), d;

	sink = malloc(100);
	free(sink);
	d = since(b);
	CHECK(d.allocs == 1 && d.frees == 1);
}

static void t_free_of_null_is_not_counted(void)
{
	struct seen b = now();

	free(NULL);
	CHECK(since(b).frees == 0);
}

static void t_calloc_and_realloc_count_once(void)
{
	struct seen b = now(), d;

	sink = calloc(4, 8);
	sink = realloc(sink, 4096);
	free(sink);
	d = since(b);
	CHECK(d.allocs == 2 && d.frees == 1);
}

static void t_aligned_allocators_count_once(void)
{
	struct seen b = now(), d;
	void *p = NULL;

	CHECK(posix_memalign(&p, 64, 100) == 0);
	free(p);
	free(aligned_alloc(64, 128));
	free(memalign(64, 100));
	free(valloc(100));
	free(pvalloc(100));
	d = since(b);
	CHECK(d.allocs == 5 && d.frees == 5);
}

static void t_strdup_and_strndup_seen_through_malloc(void)
{
	struct seen b = now(), d;

	sink = strdup("corral");
	free(sink);
	sink = strndup("corral", 3);
	free(sink);
	d = since(b);
	CHECK(d.allocs == 2 && d.frees == 2);
}

static void t_reallocarray_seen_through_realloc(void)
{
	struct seen b = now(), d;

	sink = reallocarray(NULL, 16, 16);
	free(sink);
	d = since(b);
	CHECK(d.allocs == 1 && d.frees == 1);
}

static void t_asprintf_seen_through_malloc(void)
{
	struct seen b = now(), d;
	char *s = NULL;

	CHECK(asprintf(&s, "%s %d", "corral", 7) > 0);
	free(s);
	d = since(b);
	CHECK(d.allocs >= 1 && d.frees == d.allocs);
}

static void t_fopen_seen_through_malloc(void)
{
	struct seen b = now(), d;
	FILE *f = fopen("/proc/self/stat", "r");
	char line[64];

	CHECK(f != NULL);
	CHECK(fgets(line, sizeof line, f) != NULL);
	fclose(f);
	d = since(b);
	CHECK(d.allocs >= 2 && d.frees == d.allocs);	/* the FILE, its buffer */
}

static void t_open_memstream_seen_through_malloc(void)
{
	struct seen b = now(), d;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	CHECK(f != NULL);
	for (int i = 0; i < 1000; i++)
		fprintf(f, "%d ", i);
	fclose(f);
	free(buf);
	d = since(b);
	CHECK(d.allocs >= 2 && d.frees >= 2);
}

static void t_getaddrinfo_seen_through_malloc(void)
{
	struct seen b = now(), d;
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;

	CHECK(getaddrinfo("127.0.0.1", "80", &hints, &res) == 0);
	freeaddrinfo(res);
	d = since(b);
	CHECK(d.allocs >= 1 && d.frees >= 1);
}

static void *on_thread(void *arg)
{
	sink = malloc(10);
	free(sink);
	return arg;
}

static void t_other_threads_are_counted(void)
{
	struct seen b = now(), d;
	pthread_t t;

	CHECK(pthread_create(&t, NULL, on_thread, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	d = since(b);
	CHECK(d.allocs >= 1 && d.frees >= 1);
}

int main(void)
{
	read_counts = (void (*)(unsigned long long *, unsigned long long *))
		dlsym(RTLD_DEFAULT, "alloc_count_read");
	if (read_counts == NULL) {
		printf("FAIL alloc_probe: alloc_count.so is not preloaded\n");
		return 1;
	}
	RUN(t_malloc_and_free_count_once);
	RUN(t_free_of_null_is_not_counted);
	RUN(t_calloc_and_realloc_count_once);
	RUN(t_aligned_allocators_count_once);
	RUN(t_strdup_and_strndup_seen_through_malloc);
	RUN(t_reallocarray_seen_through_realloc);
	RUN(t_asprintf_seen_through_malloc);
	RUN(t_fopen_seen_through_malloc);
	RUN(t_open_memstream_seen_through_malloc);
	RUN(t_getaddrinfo_seen_through_malloc);
	RUN(t_other_threads_are_counted);
	return unit_exit();
}
