/* SPDX-License-Identifier: MIT */
/*
 * alloc_count.so: counts a process's heap allocations, for tests.
 *
 *   LD_PRELOAD=build/tools/alloc_count.so ALLOC_COUNT_FILE=/tmp/counts \
 *       build/release/corral -c corral.conf
 *
 * Preloaded, it interposes the allocator's entry points and counts each call
 * with an atomic counter (every thread of the process: libcurl's resolver
 * thread too) before passing it on to the allocator found next (glibc's):
 *
 *   allocations  malloc, calloc, realloc (every call, realloc(NULL, n) and
 *                realloc(p, 0) included), posix_memalign, aligned_alloc,
 *                memalign, valloc, pvalloc
 *   frees        free of a pointer other than NULL
 *
 * What it sees. glibc's own functions that allocate (strdup, strndup,
 * asprintf, fopen, getline, open_memstream, getaddrinfo, reallocarray, ...)
 * call malloc, realloc and free through their exported, interposable
 * symbols (glibc keeps them so that an allocator can be replaced), and so
 * does the dynamic loader once libc is relocated (dlopen, the TLS of a new
 * thread). Those are counted once each, as the malloc or realloc they make;
 * strdup and the like are not interposed themselves, or they would count
 * twice. tests/tools/alloc_probe.c checks this list against the glibc it
 * runs on. libevent, hiredis and libcurl allocate through malloc (Corral
 * installs no allocator of its own in them).
 *
 * What it cannot see: memory taken without the allocator (mmap, a thread's
 * stack, shared memory, alloca and arrays on the stack); the loader's own
 * allocations before libc is relocated (before main, never in steady
 * state); a statically linked program, or one whose allocator is linked in
 * (a sanitizer build: ASan replaces malloc itself, so the tests preload
 * this into the release build). A program run under valgrind gets
 * valgrind's allocator, not this.
 *
 * Reading the counts. With ALLOC_COUNT_FILE=PATH in its environment, each
 * process (and each process it forks: a pthread_atfork handler starts one
 * in the child) runs a thread that every ALLOC_COUNT_INTERVAL_MS writes
 *
 *   PID SEQ ALLOCS FREES MALLOC CALLOC REALLOC ALIGNED BYTES
 *
 * to PATH.PID: SEQ counts the writes, BYTES the bytes asked for. It writes
 * PATH.PID.tmp and renames it over PATH.PID, so a reader always reads one
 * whole line. A thread rather than a timer signal: a signal would cut
 * short the program's own system calls (EINTR) and would need a handler
 * and a timer the program does not expect, and timers do not survive
 * fork. The thread blocks every signal, so none meant for the program is
 * delivered to it; it allocates nothing after it starts (snprintf of
 * integers into a buffer on its stack, open, write, close, rename,
 * nanosleep) and keeps no descriptor open between writes. Creating it
 * allocates (its TLS): that is counted, once, at start-up.
 *
 * dlsym may itself call calloc before the real functions are known: while
 * they are being looked up, allocations come from a small static arena
 * (never freed; free and realloc recognise its pointers).
 */

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ALLOC_COUNT_INTERVAL_MS	20
#define WRITER_STACK_BYTES	(64 * 1024)
#define ARENA_BYTES		(64 * 1024)	/* dlsym's needs while it resolves */
#define ARENA_ALIGN		16
#define LINE_BYTES		256

enum counter { C_MALLOC, C_CALLOC, C_REALLOC, C_ALIGNED, C_FREE, C_BYTES, C_COUNT };

enum resolve_state { UNRESOLVED, RESOLVING, RESOLVED };

static _Atomic unsigned long long counts[C_COUNT];
static _Atomic int state = UNRESOLVED;

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void (*real_free)(void *);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static void *(*real_memalign)(size_t, size_t);
static void *(*real_valloc)(size_t);
static void *(*real_pvalloc)(size_t);

static _Alignas(ARENA_ALIGN) unsigned char arena[ARENA_BYTES];
static _Atomic size_t arena_used;

static char count_path[PATH_MAX - 32];	/* ALLOC_COUNT_FILE, or "" */

static void count(enum counter c, size_t bytes)
{
	atomic_fetch_add_explicit(&counts[c], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&counts[C_BYTES], bytes, memory_order_relaxed);
}

static unsigned long long get(enum counter c)
{
	return atomic_load_explicit(&counts[c], memory_order_relaxed);
}

static void die(const char *what)
{
	static const char head[] = "alloc_count: ";

	(void)!write(STDERR_FILENO, head, sizeof head - 1);
	(void)!write(STDERR_FILENO, what, strlen(what));
	(void)!write(STDERR_FILENO, "\n", 1);
	abort();
}

/* -- the bootstrap arena: while dlsym runs ---------------------------------- */

/* Each block is preceded by its size, in ARENA_ALIGN bytes. */
static void *arena_alloc(size_t n)
{
	size_t need = ARENA_ALIGN + ((n + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1));
	size_t at = atomic_fetch_add(&arena_used, need);

	if (n > ARENA_BYTES || at + need > ARENA_BYTES)
		die("bootstrap arena exhausted");
	memcpy(arena + at, &n, sizeof n);
	return arena + at + ARENA_ALIGN;	/* static storage: already zero */
}

static int in_arena(const void *p)
{
	return (const unsigned char *)p >= arena && (const unsigned char *)p < arena + ARENA_BYTES;
}

static size_t arena_size(const void *p)
{
	size_t n;

	memcpy(&n, (const unsigned char *)p - ARENA_ALIGN, sizeof n);
	return n;
}

/* -- finding the real allocator --------------------------------------------- */

static void *next(const char *name, int required)
{
	void *f = dlsym(RTLD_NEXT, name);

	if (f == NULL && required)
		die(name);
	return f;
}

/* Is the real allocator known? Looks it up on the first call; calls made
 * meanwhile (by dlsym, or another thread) answer no and use the arena. */
static int resolved(void)
{
	int expected = UNRESOLVED;

	if (atomic_load(&state) == RESOLVED)
		return 1;
	if (!atomic_compare_exchange_strong(&state, &expected, RESOLVING))
		return 0;
	real_malloc = (void *(*)(size_t))next("malloc", 1);
	real_calloc = (void *(*)(size_t, size_t))next("calloc", 1);
	real_realloc = (void *(*)(void *, size_t))next("realloc", 1);
	real_free = (void (*)(void *))next("free", 1);
	real_memalign = (void *(*)(size_t, size_t))next("memalign", 1);
	real_posix_memalign = (int (*)(void **, size_t, size_t))next("posix_memalign", 0);
	real_aligned_alloc = (void *(*)(size_t, size_t))next("aligned_alloc", 0);
	real_valloc = (void *(*)(size_t))next("valloc", 0);
	real_pvalloc = (void *(*)(size_t))next("pvalloc", 0);
	atomic_store(&state, RESOLVED);
	return 1;
}

/* -- the interposed entry points -------------------------------------------- */

void *malloc(size_t n)
{
	count(C_MALLOC, n);
	return resolved() ? real_malloc(n) : arena_alloc(n);
}

void *calloc(size_t n, size_t size)
{
	size_t bytes;

	if (__builtin_mul_overflow(n, size, &bytes))
		bytes = SIZE_MAX;
	count(C_CALLOC, bytes);
	if (resolved())
		return real_calloc(n, size);
	return bytes == SIZE_MAX ? NULL : arena_alloc(bytes);
}

void *realloc(void *p, size_t n)
{
	void *q;

	count(C_REALLOC, n);
	if (!in_arena(p))
		return resolved() ? real_realloc(p, n) : arena_alloc(n);
	q = resolved() ? real_malloc(n) : arena_alloc(n);
	if (q != NULL)
		memcpy(q, p, arena_size(p) < n ? arena_size(p) : n);
	return q;
}

void free(void *p)
{
	if (p == NULL)
		return;
	count(C_FREE, 0);
	if (!in_arena(p) && resolved())
		real_free(p);
}

void *memalign(size_t align, size_t n)
{
	count(C_ALIGNED, n);
	if (!resolved())
		die("memalign while resolving the allocator");
	return real_memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
	void *p;

	count(C_ALIGNED, n);
	if (!resolved())
		die("posix_memalign while resolving the allocator");
	if (real_posix_memalign != NULL)
		return real_posix_memalign(out, align, n);
	p = real_memalign(align, n);
	if (p == NULL)
		return ENOMEM;
	*out = p;
	return 0;
}

void *aligned_alloc(size_t align, size_t n)
{
	count(C_ALIGNED, n);
	if (!resolved())
		die("aligned_alloc while resolving the allocator");
	return real_aligned_alloc != NULL ? real_aligned_alloc(align, n)
					  : real_memalign(align, n);
}

void *valloc(size_t n)
{
	long page = sysconf(_SC_PAGESIZE);

	count(C_ALIGNED, n);
	if (!resolved())
		die("valloc while resolving the allocator");
	return real_valloc != NULL ? real_valloc(n) : real_memalign((size_t)page, n);
}

void *pvalloc(size_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	count(C_ALIGNED, n);
	if (!resolved())
		die("pvalloc while resolving the allocator");
	return real_pvalloc != NULL ? real_pvalloc(n)
				    : real_memalign(page, (n + page - 1) & ~(page - 1));
}

/* -- reading the counts ---------------------------------------------------- */

/* For a program that looks it up with dlsym (tests/tools/alloc_probe.c). */
void alloc_count_read(unsigned long long *allocs, unsigned long long *frees);

void alloc_count_read(unsigned long long *allocs, unsigned long long *frees)
{
	*allocs = get(C_MALLOC) + get(C_CALLOC) + get(C_REALLOC) + get(C_ALIGNED);
	*frees = get(C_FREE);
}

/* -- the writer thread ------------------------------------------------------ */

static void write_counts(const char *path, const char *tmp, int pid, unsigned long long seq)
{
	char line[LINE_BYTES];
	unsigned long long m = get(C_MALLOC), c = get(C_CALLOC), r = get(C_REALLOC);
	unsigned long long a = get(C_ALIGNED);
	int len, fd;

	len = snprintf(line, sizeof line, "%d %llu %llu %llu %llu %llu %llu %llu %llu\n",
		       pid, seq, m + c + r + a, get(C_FREE), m, c, r, a, get(C_BYTES));
	if (len <= 0 || (size_t)len >= sizeof line)
		return;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd == -1)
		return;
	if (write(fd, line, (size_t)len) == len && close(fd) == 0)
		(void)rename(tmp, path);
	else
		(void)close(fd);
}

static void *on_writer(void *unused)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	int pid = (int)getpid();
	struct timespec interval = { 0, ALLOC_COUNT_INTERVAL_MS * 1000000L };

	if (snprintf(path, sizeof path, "%s.%d", count_path, pid) >= (int)sizeof path ||
	    snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
		return NULL;
	for (unsigned long long seq = 1;; seq++) {
		struct timespec left = interval;

		write_counts(path, tmp, pid, seq);
		while (nanosleep(&left, &left) == -1)
			;
	}
	return NULL;
}

/* Starts the writer with every signal blocked (it inherits the mask). */
static void start_writer(void)
{
	pthread_attr_t attr;
	pthread_t thread;
	sigset_t all, old;

	if (count_path[0] == '\0')
		return;
	if (pthread_attr_init(&attr) != 0)
		die("pthread_attr_init");
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, WRITER_STACK_BYTES);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&thread, &attr, on_writer, NULL) != 0)
		die("cannot start the writer thread");
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
}

static void on_fork_child(void)
{
	start_writer();
}

__attribute__((constructor))
static void alloc_count_init(void)
{
	const char *path = getenv("ALLOC_COUNT_FILE");

	(void)resolved();
	if (path == NULL || path[0] == '\0')
		return;
	if (strlen(path) >= sizeof count_path)
		die("ALLOC_COUNT_FILE is too long");
	strcpy(count_path, path);
	if (pthread_atfork(NULL, NULL, on_fork_child) != 0)
		die("pthread_atfork");
	start_writer();
}
