/* SPDX-License-Identifier: MIT */
/*
 * What each coding and level costs on a JSON API response: its size
 * packed, and the time to encode and to decode one body (the median of
 * SAMPLES runs, one thread). Made with make bench-codec; not part of
 * make test or make bench.
 *
 *	build/bench/codec_bench [bytes...]	(default: 102400 1024)
 *
 * Each size is a decimal count of bytes, BODY_MIN to BODY_MAX.
 */

#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>

#include "codec/codec.h"

#define SAMPLES		9		/* runs a median is taken of */
#define SAMPLE_MIN_NS	20000000.0	/* a run repeats up to this long */
#define RECORD_MAX	2048		/* one object of the response */
#define NS		1e9
#define BODY_MIN	64		/* the least body measured, bytes */
#define BODY_MAX	((size_t)64 << 20)	/* the most: 64 MiB */

static const char *const firsts[] = {
	"Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Frances",
	"Ken", "Dennis", "Margaret", "Niklaus", "Radia", "Leslie", "Tony",
};
static const char *const lasts[] = {
	"Lovelace", "Hopper", "Turing", "Dijkstra", "Liskov", "Knuth", "Allen",
	"Thompson", "Ritchie", "Hamilton", "Wirth", "Perlman", "Lamport",
};
static const char *const cities[] = {
	"Lisbon", "Oslo", "Montreal", "Osaka", "Nairobi", "Valparaiso",
	"Tallinn", "Brisbane",
};
static const char *const states[] = { "active", "suspended", "pending" };
static const char *const tags[] = {
	"beta", "admin", "newsletter", "mobile", "trial", "enterprise", "vip",
};

static uint64_t rng = 0x2545f4914f6cdd1dULL;

static uint64_t
next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

#define PICK(a)	((a)[next_rand() % (sizeof(a) / sizeof((a)[0]))])

static void
stamp(char *out, size_t len)
{
	snprintf(out, len, "2025-%02d-%02dT%02d:%02d:%02d.%03dZ",
	    (int)(1 + next_rand() % 12), (int)(1 + next_rand() % 28),
	    (int)(next_rand() % 24), (int)(next_rand() % 60),
	    (int)(next_rand() % 60), (int)(next_rand() % 1000));
}

/* One user object, as an API would list it. */
static int
record(char *out, size_t len, unsigned id)
{
	const char *first = PICK(firsts), *last = PICK(lasts);
	char created[32], updated[32];
	uint64_t u = next_rand();

	stamp(created, sizeof(created));
	stamp(updated, sizeof(updated));
	return snprintf(out, len, "{\"id\":%u,\"uuid\":\"%08x-%04x-4%03x-"
	    "%04x-%012llx\",\"name\":\"%s %s\",\"email\":\"%c.%s%u@example"
	    ".com\",\"status\":\"%s\",\"score\":%u.%u,\"created_at\":\"%s\","
	    "\"updated_at\":\"%s\",\"tags\":[\"%s\",\"%s\"],\"address\":{"
	    "\"street\":\"%u Main Street\",\"city\":\"%s\",\"postal_code\":"
	    "\"%05u\"},\"orders\":[{\"sku\":\"SKU-%06u\",\"quantity\":%u,"
	    "\"unit_price\":%u.%02u,\"currency\":\"EUR\"}],\"verified\":%s}",
	    id, (unsigned)u, (unsigned)(u >> 32) & 0xffff,
	    (unsigned)(u >> 48) & 0xfff, (unsigned)next_rand() & 0xffff,
	    (unsigned long long)(next_rand() & 0xffffffffffffULL), first, last,
	    first[0] + 32, last, id % 100, PICK(states),
	    (unsigned)(next_rand() % 100), (unsigned)(next_rand() % 10),
	    created, updated, PICK(tags), PICK(tags),
	    (unsigned)(1 + next_rand() % 999), PICK(cities),
	    (unsigned)(next_rand() % 100000), (unsigned)(next_rand() % 1000000),
	    (unsigned)(1 + next_rand() % 5), (unsigned)(next_rand() % 200),
	    (unsigned)(next_rand() % 100), next_rand() % 2 ? "true" : "false");
}

/* A response of about len bytes: {"data":[objects...],"page":...}. */
static char *
make_json(size_t len, size_t *outlen)
{
	char *b = malloc(len + RECORD_MAX + 64), rec[RECORD_MAX];
	size_t n = 0;
	unsigned id = 1000;
	int k;

	if (b == NULL)
		return NULL;
	n += (size_t)sprintf(b, "{\"data\":[");
	do {
		k = record(rec, sizeof(rec), id++);
		if (n + (size_t)k + 40 > len && id > 1001)
			break;
		if (id > 1001)
			b[n++] = ',';
		memcpy(b + n, rec, (size_t)k);
		n += (size_t)k;
	} while (n < len);
	n += (size_t)sprintf(b + n, "],\"page\":1,\"per_page\":%u}", id - 1000);
	*outlen = n;
	return b;
}

static double
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * NS + (double)ts.tv_nsec;
}

static int
by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median time of one encode (decode: 0) or decode (1), in ns. */
static double
median_ns(int decode, enum coding c, int level, const char *in, size_t len,
    const unsigned char *z, size_t zlen)
{
	struct evbuffer *out = evbuffer_new();
	double t[SAMPLES], start;
	char err[CODEC_ERR_LEN];
	unsigned reps = 1;

	for (int s = 0; s < SAMPLES; s++) {
		unsigned i;

		start = now_ns();
		for (i = 0; i < reps || now_ns() - start < SAMPLE_MIN_NS; i++) {
			if (decode ? codec_decode_to(out, c, z, zlen, len) !=
			    CODEC_OK : codec_encode(out, c, level, in, len, err,
			    sizeof(err)) == -1) {
				fprintf(stderr, "codec_bench: %s %d failed\n",
				    codec_name(c), level);
				exit(1);
			}
			evbuffer_drain(out, evbuffer_get_length(out));
		}
		reps = i;
		t[s] = (now_ns() - start) / i;
	}
	evbuffer_free(out);
	qsort(t, SAMPLES, sizeof(t[0]), by_value);
	return t[SAMPLES / 2];
}

static void
measure(const char *body, size_t len)
{
	static const struct {
		enum coding	c;
		int		level;
	} runs[] = {
		{ CODING_GZIP, 1 }, { CODING_GZIP, 6 }, { CODING_GZIP, 9 },
		{ CODING_BR, 4 }, { CODING_BR, 5 }, { CODING_BR, 6 },
		{ CODING_BR, 11 }, { CODING_ZSTD, 1 }, { CODING_ZSTD, 3 },
		{ CODING_ZSTD, 9 }, { CODING_ZSTD, 19 },
	};
	unsigned char *z;
	size_t zlen;
	char err[CODEC_ERR_LEN];

	printf("\n%zu bytes of JSON\n\n", len);
	printf("| coding | level | bytes | ratio | encode us | decode us |\n");
	printf("|---|---:|---:|---:|---:|---:|\n");
	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		if (codec_encode_alloc(runs[i].c, runs[i].level, body, len, &z,
		    &zlen, err, sizeof(err)) == -1) {
			fprintf(stderr, "codec_bench: %s\n", err);
			exit(1);
		}
		printf("| %s | %d | %zu | %.1f%% | %.1f | %.1f |\n",
		    codec_name(runs[i].c), runs[i].level, zlen,
		    100.0 * (double)zlen / (double)len,
		    median_ns(0, runs[i].c, runs[i].level, body, len, z,
		    zlen) / 1e3,
		    median_ns(1, runs[i].c, runs[i].level, body, len, z,
		    zlen) / 1e3);
		fflush(stdout);
		free(z);
	}
}

/* A body size from the command line: *len, or -1 with a message. */
static int
parse_size(const char *arg, size_t *len)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (arg[0] < '0' || arg[0] > '9' || *end != '\0' || errno != 0 ||
	    v < BODY_MIN || v > BODY_MAX) {
		fprintf(stderr, "codec_bench: %s: a size is %d to %zu bytes\n",
		    arg, BODY_MIN, BODY_MAX);
		return -1;
	}
	*len = (size_t)v;
	return 0;
}

int
main(int argc, char **argv)
{
	static const size_t sizes[] = { 100 * 1024, 1024 };
	char *body;
	size_t len, want;

	for (int i = 1; i < argc; i++)
		if (parse_size(argv[i], &want) == -1)
			return 2;
	for (int i = 0; i < (argc > 1 ? argc - 1 : 2); i++) {
		if (argc > 1)
			(void)parse_size(argv[i + 1], &want);
		else
			want = sizes[i];
		if ((body = make_json(want, &len)) == NULL)
			return 1;
		measure(body, len);
		free(body);
	}
	return 0;
}
