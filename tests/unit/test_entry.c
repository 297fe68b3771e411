/* SPDX-License-Identifier: MIT */
#include "common/hlist.h"
#include "cache/cache_entry.h"

#include <sys/queue.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "tests/unit/unit.h"

#define TEST_GEN	"0123456789abcdef0123456789abcdef"
/* Offsets into an encoding (see cache_entry.c). */
#define OFF_MAGIC	ENTRY_GEN_LEN
#define OFF_VERSION	(OFF_MAGIC + 4)
#define OFF_STORED	(OFF_VERSION + 1)
#define OFF_FRESH	(OFF_STORED + 8)
#define OFF_STALE	(OFF_FRESH + 8)
#define OFF_FETCH	(OFF_STALE + 8)
#define OFF_STATUS	(OFF_FETCH + 4)
#define OFF_NHEADERS	(OFF_STATUS + 2)
#define OFF_HEADERS	(OFF_NHEADERS + 2)

static const unsigned char binary_body[] = {
	'a', 0x00, 'b', 0xff, 0x00, 0x00, '\r', '\n', 0x7f, 0x80, 'z'
};

/* An entry with three headers and a body containing NUL bytes. */
static struct cache_entry *
sample_entry(const void *body, size_t body_len)
{
	struct cache_entry *e = entry_new();
	struct evbuffer *b = evbuffer_new();

	if (e == NULL || b == NULL)
		abort();
	memcpy(e->gen, TEST_GEN, sizeof(TEST_GEN));
	e->stored_ms = 1700000000000LL;
	e->fresh_until_ms = e->stored_ms + 10000;
	e->stale_until_ms = e->fresh_until_ms + 60000;
	e->fetch_ms = 123;
	e->status = 200;
	if (entry_add_header(e, "Content-Type", "application/octet-stream") ||
	    entry_add_header(e, "X-Empty", "") ||
	    entry_add_header(e, "Set-Cookie", "a=1; Path=/") ||
	    evbuffer_add(b, body, body_len) == -1 ||
	    entry_set_body(e, b) == -1 || evbuffer_get_length(b) != 0)
		abort();
	evbuffer_free(b);
	return e;
}

/* Encodes e into a malloc'd buffer. */
static unsigned char *
encode(const struct cache_entry *e, size_t *lenp)
{
	struct evbuffer *b = evbuffer_new();
	unsigned char *p;

	if (b == NULL || entry_encode(e, b) == -1)
		abort();
	*lenp = evbuffer_get_length(b);
	if ((p = malloc(*lenp)) == NULL)
		abort();
	evbuffer_remove(b, p, *lenp);
	evbuffer_free(b);
	return p;
}

static int
decodes(const unsigned char *p, size_t len, const char *want_err)
{
	char err[128] = "";
	struct cache_entry *e = entry_decode(p, len, err, sizeof(err));

	if (e != NULL) {
		entry_unref(&e);
		return 1;
	}
	if (err[0] == '\0')
		return -1;	/* rejected without a reason */
	if (want_err != NULL && strstr(err, want_err) == NULL) {
		printf("  got reason \"%s\", want \"%s\"\n", err, want_err);
		return -1;
	}
	return 0;
}

static void
t_round_trip_preserves_headers_times_and_binary_body(void)
{
	struct cache_entry *e = sample_entry(binary_body, sizeof(binary_body));
	struct cache_entry *d;
	const struct hfield *kv;
	char err[128] = "";
	unsigned char *p;
	size_t len;
	int n = 0;

	p = encode(e, &len);
	d = entry_decode(p, len, err, sizeof(err));
	free(p);
	CHECK(d != NULL);
	CHECK(d->refcnt == 1);
	CHECK_STR(d->gen, TEST_GEN);
	CHECK(d->stored_ms == e->stored_ms);
	CHECK(d->fresh_until_ms == e->fresh_until_ms);
	CHECK(d->stale_until_ms == e->stale_until_ms);
	CHECK(d->fetch_ms == 123);
	CHECK(d->status == 200);
	CHECK(d->body_len == sizeof(binary_body));
	CHECK(memcmp(d->body, binary_body, sizeof(binary_body)) == 0);
	HL_FOREACH(kv, &d->headers)
		n++;
	CHECK(n == 3);
	kv = (d->headers).v;
	CHECK_STR(kv->key, "Content-Type");
	CHECK_STR(kv->value, "application/octet-stream");
	kv++;
	CHECK_STR(kv->key, "X-Empty");
	CHECK_STR(kv->value, "");
	kv++;
	CHECK_STR(kv->key, "Set-Cookie");
	CHECK_STR(kv->value, "a=1; Path=/");
	entry_unref(&d);
	entry_unref(&e);
}

static void
t_negative_times_round_trip(void)
{
	struct cache_entry *e = sample_entry("x", 1), *d;
	unsigned char *p;
	size_t len;

	e->stored_ms = INT64_MIN;
	e->fresh_until_ms = -1;
	e->stale_until_ms = INT64_MAX;
	p = encode(e, &len);
	d = entry_decode(p, len, NULL, 0);
	free(p);
	CHECK(d != NULL);
	CHECK(d->stored_ms == INT64_MIN);
	CHECK(d->fresh_until_ms == -1);
	CHECK(d->stale_until_ms == INT64_MAX);
	entry_unref(&d);
	entry_unref(&e);
}

static void
t_encoding_starts_with_the_generation(void)
{
	struct cache_entry *e = sample_entry(binary_body, sizeof(binary_body));
	unsigned char *p;
	size_t len;

	p = encode(e, &len);
	entry_unref(&e);
	CHECK(len > ENTRY_GEN_LEN);
	CHECK(memcmp(p, TEST_GEN, ENTRY_GEN_LEN) == 0);
	/* Little-endian magic right after it: "ELRC" for 0x43524c45. */
	CHECK(memcmp(p + OFF_MAGIC, "ELRC", 4) == 0);
	CHECK(p[OFF_VERSION] == 1);
	/* Nothing after the body. */
	CHECK(memcmp(p + len - sizeof(binary_body), binary_body,
	    sizeof(binary_body)) == 0);
	free(p);
}

static void
t_empty_body_round_trips(void)
{
	struct cache_entry *e = sample_entry("", 0), *d;
	unsigned char *p;
	size_t len;

	CHECK(e->body == NULL && e->body_len == 0);
	p = encode(e, &len);
	entry_unref(&e);
	d = entry_decode(p, len, NULL, 0);
	free(p);
	CHECK(d != NULL);
	CHECK(d->body_len == 0);
	CHECK(d->body == NULL);
	entry_unref(&d);
}

static void
t_every_truncation_is_rejected(void)
{
	struct cache_entry *e = sample_entry(binary_body, sizeof(binary_body));
	unsigned char *p, *copy;
	size_t len, accepted = SIZE_MAX;

	p = encode(e, &len);
	entry_unref(&e);
	CHECK(decodes(p, len, NULL) == 1);
	for (size_t n = 0; n < len; n++) {
		/* An exact-size copy, so ASan sees any read past the end. */
		if ((copy = malloc(n > 0 ? n : 1)) == NULL)
			abort();
		memcpy(copy, p, n);
		if (decodes(copy, n, "truncated") != 0)
			accepted = n;
		free(copy);
		if (accepted != SIZE_MAX)
			break;
	}
	free(p);
	CHECK(accepted == SIZE_MAX);
	CHECK(decodes(NULL, 0, "truncated") == 0);
}

static void
t_trailing_garbage_is_rejected(void)
{
	struct cache_entry *e = sample_entry(binary_body, sizeof(binary_body));
	unsigned char *p, *q;
	size_t len;

	p = encode(e, &len);
	entry_unref(&e);
	q = malloc(len + 1);
	CHECK(q != NULL);
	memcpy(q, p, len);
	q[len] = 'x';
	free(p);
	CHECK(decodes(q, len + 1, "trailing") == 0);
	free(q);
}

/* Encodes the sample, lets fn damage a copy, and decodes that. */
static int
decodes_damaged(void (*fn)(unsigned char *), const char *want_err)
{
	struct cache_entry *e = sample_entry(binary_body, sizeof(binary_body));
	unsigned char *p;
	size_t len;
	int rc;

	p = encode(e, &len);
	entry_unref(&e);
	fn(p);
	rc = decodes(p, len, want_err);
	free(p);
	return rc;
}

static void damage_gen_upper(unsigned char *p) { p[0] = 'A'; }
static void damage_gen_nonhex(unsigned char *p) { p[31] = 'g'; }
static void damage_magic(unsigned char *p) { p[OFF_MAGIC] ^= 0x01; }
static void damage_version(unsigned char *p) { p[OFF_VERSION] = 3; }
static void damage_status_low(unsigned char *p)
{
	p[OFF_STATUS] = 99;
	p[OFF_STATUS + 1] = 0;
}
static void damage_status_high(unsigned char *p)
{
	p[OFF_STATUS] = 600 & 0xff;
	p[OFF_STATUS + 1] = 600 >> 8;
}
/* The first header is "Content-Type": name bytes follow a u16 length. */
static void damage_name_space(unsigned char *p) { p[OFF_HEADERS + 9] = ' '; }
static void damage_name_colon(unsigned char *p) { p[OFF_HEADERS + 2] = ':'; }
static void damage_name_empty(unsigned char *p)
{
	p[OFF_HEADERS] = 0;
	p[OFF_HEADERS + 1] = 0;
}
/* Its value "application/octet-stream" follows the name and a u32. */
#define OFF_VALUE	(OFF_HEADERS + 2 + 12 + 4)
static void damage_value_cr(unsigned char *p) { p[OFF_VALUE + 3] = '\r'; }
static void damage_value_lf(unsigned char *p) { p[OFF_VALUE + 3] = '\n'; }
static void damage_value_nul(unsigned char *p) { p[OFF_VALUE + 3] = '\0'; }
static void damage_value_len(unsigned char *p) { p[OFF_VALUE - 1] = 0x7f; }
static void damage_fresh_before_stored(unsigned char *p)
{
	memset(p + OFF_FRESH, 0, 8);
}
static void damage_stale_before_fresh(unsigned char *p)
{
	memcpy(p + OFF_STALE, p + OFF_STORED, 8);
}

static void
t_bad_fields_are_rejected_with_a_reason(void)
{
	CHECK(decodes_damaged(damage_gen_upper, "generation") == 0);
	CHECK(decodes_damaged(damage_gen_nonhex, "generation") == 0);
	CHECK(decodes_damaged(damage_magic, "bad magic") == 0);
	CHECK(decodes_damaged(damage_version, "version") == 0);
	CHECK(decodes_damaged(damage_status_low, "status") == 0);
	CHECK(decodes_damaged(damage_status_high, "status") == 0);
	CHECK(decodes_damaged(damage_name_space, "header name") == 0);
	CHECK(decodes_damaged(damage_name_colon, "header name") == 0);
	CHECK(decodes_damaged(damage_name_empty, "header name") == 0);
	CHECK(decodes_damaged(damage_value_cr, "header value") == 0);
	CHECK(decodes_damaged(damage_value_lf, "header value") == 0);
	CHECK(decodes_damaged(damage_value_nul, "header value") == 0);
	CHECK(decodes_damaged(damage_value_len, "truncated header value") == 0);
	CHECK(decodes_damaged(damage_fresh_before_stored, "times") == 0);
	CHECK(decodes_damaged(damage_stale_before_fresh, "times") == 0);
}

static void
t_header_count_over_the_max_is_rejected(void)
{
	struct cache_entry *e = sample_entry("", 0);
	unsigned char *p;
	size_t len;
	uint16_t n = ENTRY_MAX_HEADERS + 1;

	p = encode(e, &len);
	entry_unref(&e);
	p[OFF_NHEADERS] = n & 0xff;
	p[OFF_NHEADERS + 1] = n >> 8;
	CHECK(decodes(p, len, "too many headers") == 0);
	p[OFF_NHEADERS] = 0xff;
	p[OFF_NHEADERS + 1] = 0xff;
	CHECK(decodes(p, len, "too many headers") == 0);
	free(p);
}

static void
t_max_headers_round_trip_and_one_more_is_refused(void)
{
	struct cache_entry *e = entry_new(), *d;
	char name[32];
	unsigned char *p;
	size_t len;

	CHECK(e != NULL);
	memcpy(e->gen, TEST_GEN, sizeof(TEST_GEN));
	e->status = 204;
	for (int i = 0; i < ENTRY_MAX_HEADERS; i++) {
		snprintf(name, sizeof(name), "X-H%d", i);
		CHECK(entry_add_header(e, name, "v") == 0);
	}
	CHECK(entry_add_header(e, "X-Over", "v") == -1);
	p = encode(e, &len);
	entry_unref(&e);
	d = entry_decode(p, len, NULL, 0);
	free(p);
	CHECK(d != NULL);
	CHECK_STR(hl_find(&d->headers, "X-H127"), "v");
	entry_unref(&d);
}

static void
t_add_header_refuses_crlf_and_bad_names(void)
{
	struct cache_entry *e = entry_new();

	CHECK(e != NULL);
	CHECK(entry_add_header(e, "X-A", "a\r\nX-Injected: 1") == -1);
	CHECK(entry_add_header(e, "X-A", "a\nb") == -1);
	CHECK(entry_add_header(e, "X-A", "a\rb") == -1);
	CHECK(entry_add_header(e, "X-A\r\nB", "v") == -1);
	CHECK(entry_add_header(e, "", "v") == -1);
	CHECK(entry_add_header(e, "X A", "v") == -1);
	CHECK(entry_add_header(e, "X:A", "v") == -1);
	CHECK((e->headers).n == 0);
	CHECK(entry_add_header(e, "X-A", "a\tb") == 0);
	entry_unref(&e);
}

static void
t_encode_refuses_what_decode_would_reject(void)
{
	struct cache_entry *e = entry_new();
	struct evbuffer *b = evbuffer_new();

	CHECK(e != NULL && b != NULL);
	e->status = 200;
	CHECK(entry_encode(e, b) == -1);		/* gen "" */
	memcpy(e->gen, "0123456789ABCDEF0123456789abcdef", ENTRY_GEN_LEN + 1);
	CHECK(entry_encode(e, b) == -1);		/* uppercase gen */
	memcpy(e->gen, TEST_GEN, sizeof(TEST_GEN));
	e->status = 0;
	CHECK(entry_encode(e, b) == -1);
	e->status = 200;
	e->stored_ms = 10;
	e->fresh_until_ms = 5;
	CHECK(entry_encode(e, b) == -1);
	CHECK(evbuffer_get_length(b) == 0);
	e->fresh_until_ms = 10;
	e->stale_until_ms = 10;
	CHECK(entry_encode(e, b) == 0);
	CHECK(evbuffer_get_length(b) > 0);
	evbuffer_free(b);
	entry_unref(&e);
}

static void
t_freshness_states_at_exact_boundaries(void)
{
	struct cache_entry *e = entry_new();

	CHECK(e != NULL);
	e->stored_ms = 1000;
	e->fresh_until_ms = 2000;
	e->stale_until_ms = 5000;
	CHECK(entry_state(e, 1000) == ENTRY_FRESH);
	CHECK(entry_state(e, 1999) == ENTRY_FRESH);
	CHECK(entry_state(e, 2000) == ENTRY_STALE);
	CHECK(entry_state(e, 4999) == ENTRY_STALE);
	CHECK(entry_state(e, 5000) == ENTRY_EXPIRED);
	CHECK(entry_state(e, INT64_MAX) == ENTRY_EXPIRED);
	/* No stale window: straight from fresh to expired. */
	e->stale_until_ms = 2000;
	CHECK(entry_state(e, 1999) == ENTRY_FRESH);
	CHECK(entry_state(e, 2000) == ENTRY_EXPIRED);
	CHECK_STR(entry_state_name(ENTRY_FRESH), "fresh");
	CHECK_STR(entry_state_name(ENTRY_STALE), "stale");
	CHECK_STR(entry_state_name(ENTRY_EXPIRED), "expired");
	entry_unref(&e);
}

static void
t_ref_then_two_unrefs_frees_and_nulls(void)
{
	struct cache_entry *a = entry_new(), *b;

	CHECK(a != NULL);
	CHECK(a->refcnt == 1);
	CHECK(a->magic == ENTRY_MAGIC);
	CHECK(a->gen[0] == '\0');
	CHECK((a->headers).n == 0);
	CHECK(entry_add_header(a, "X-A", "1") == 0);
	b = entry_ref(a);
	CHECK(b == a);
	CHECK(a->refcnt == 2);
	entry_unref(&a);
	CHECK(a == NULL);
	CHECK(b->refcnt == 1);
	CHECK_STR(hl_find(&b->headers, "X-A"), "1");
	entry_unref(&b);	/* freed, or ASan reports a leak */
	CHECK(b == NULL);
	entry_unref(&b);		/* NULL is a no-op */
}

static void
t_set_body_replaces_and_drains(void)
{
	struct cache_entry *e = entry_new();
	struct evbuffer *b = evbuffer_new();

	CHECK(e != NULL && b != NULL);
	evbuffer_add(b, "first", 5);
	CHECK(entry_set_body(e, b) == 0);
	CHECK(evbuffer_get_length(b) == 0);
	evbuffer_add(b, "second!", 7);
	CHECK(entry_set_body(e, b) == 0);
	CHECK(e->body_len == 7 && memcmp(e->body, "second!", 7) == 0);
	CHECK(entry_set_body(e, b) == 0);
	CHECK(e->body == NULL && e->body_len == 0);
	evbuffer_free(b);
	entry_unref(&e);
}

static void
t_decode_take_keeps_the_body_in_the_buffer_it_took(void)
{
	struct cache_entry *e = sample_entry(binary_body, sizeof(binary_body));
	struct cache_entry *d;
	char err[128] = "";
	unsigned char *p;
	size_t len;

	p = encode(e, &len);
	d = entry_decode_take(p, len, err, sizeof(err));
	CHECK(d != NULL);
	/* The body was not copied: it is the tail of p, which d now owns
	 * (ASan reports a leak or a double free otherwise). */
	CHECK(d->body == p + len - sizeof(binary_body));
	CHECK(d->body_len == sizeof(binary_body));
	CHECK(memcmp(d->body, binary_body, sizeof(binary_body)) == 0);
	CHECK_STR(d->gen, TEST_GEN);
	entry_unref(&d);
	/* Refused: the buffer stays the caller's. */
	p = encode(e, &len);
	p[OFF_VERSION] = 99;
	CHECK(entry_decode_take(p, len, err, sizeof(err)) == NULL);
	CHECK(strstr(err, "version") != NULL);
	free(p);
	entry_unref(&e);
}

/* A cached POST's entry keeps the request body it answers (version 2);
 * one without stays version 1, byte for byte as before. */
static void
t_request_body_round_trips_and_only_it_makes_version_2(void)
{
	static const char req[] = "{\"query\": \"{ a }\"}";
	struct cache_entry *e = sample_entry(binary_body, sizeof(binary_body));
	struct cache_entry *d, *t;
	unsigned char *buf, *cut;
	size_t len, len1;

	free(encode(e, &len1));
	CHECK(entry_set_request(e, req, strlen(req)) == 0);
	buf = encode(e, &len);
	CHECK(buf[OFF_VERSION] == 2 && len == len1 + 8 + strlen(req));
	d = entry_decode(buf, len, NULL, 0);
	CHECK(d != NULL && d->request_len == strlen(req) &&
	    memcmp(d->request, req, strlen(req)) == 0);
	CHECK(d->body_len == sizeof(binary_body) &&
	    memcmp(d->body, binary_body, sizeof(binary_body)) == 0);
	entry_unref(&d);
	/* Taken in place: the body stays, the request is its own copy. */
	cut = malloc(len);
	memcpy(cut, buf, len);
	CHECK((t = entry_decode_take(cut, len, NULL, 0)) != NULL);
	CHECK(t->request_len == strlen(req) && t->store == cut);
	entry_unref(&t);
	/* Every truncation fails, the buffer still the caller's. */
	for (size_t n = 0; n < len; n++) {
		cut = malloc(len);
		memcpy(cut, buf, len);
		CHECK(entry_decode_take(cut, n, NULL, 0) == NULL);
		free(cut);
	}
	CHECK(entry_set_request(e, NULL, 0) == 0);
	free(buf);
	buf = encode(e, &len);
	CHECK(buf[OFF_VERSION] == 1 && len == len1);
	free(buf);
	entry_unref(&e);
}

int
main(void)
{
	RUN(t_round_trip_preserves_headers_times_and_binary_body);
	RUN(t_negative_times_round_trip);
	RUN(t_encoding_starts_with_the_generation);
	RUN(t_empty_body_round_trips);
	RUN(t_every_truncation_is_rejected);
	RUN(t_trailing_garbage_is_rejected);
	RUN(t_bad_fields_are_rejected_with_a_reason);
	RUN(t_header_count_over_the_max_is_rejected);
	RUN(t_max_headers_round_trip_and_one_more_is_refused);
	RUN(t_add_header_refuses_crlf_and_bad_names);
	RUN(t_encode_refuses_what_decode_would_reject);
	RUN(t_freshness_states_at_exact_boundaries);
	RUN(t_ref_then_two_unrefs_frees_and_nulls);
	RUN(t_set_body_replaces_and_drains);
	RUN(t_request_body_round_trips_and_only_it_makes_version_2);
	RUN(t_decode_take_keeps_the_body_in_the_buffer_it_took);
	return unit_exit();
}
