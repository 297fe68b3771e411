/*
 * Key rules (cache/cache_keyrule.c), GraphQL bodies (cache/cache_graphql.c)
 * and their digests (common/sha256.c): pure, so the same inputs make the
 * same key, and a key never holds a credential or a body in clear.
 */

#include "cache/cache_graphql.h"
#include "cache/cache_keyrule.h"
#include "common/sha256.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/unit.h"

static const char secret[] = "0123456789abcdef-test-secret";

static void
hex_of(const unsigned char *p, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
}

static const char *
sha_hex(const char *msg, size_t n, char out[2 * SHA256_LEN + 1])
{
	struct sha256 s;
	unsigned char d[SHA256_LEN];

	sha256_init(&s);
	sha256_update(&s, msg, n);
	sha256_final(&s, d);
	hex_of(d, sizeof(d), out);
	return out;
}

/* FIPS 180-4 examples (NIST CSRC), and a message across blocks. */
static void
t_sha256_matches_the_published_vectors(void)
{
	char hex[2 * SHA256_LEN + 1], *million;
	struct sha256 s;
	unsigned char d[SHA256_LEN];

	CHECK_STR(sha_hex("abc", 3, hex), "ba7816bf8f01cfea414140de5dae2223"
	    "b00361a396177a9cb410ff61f20015ad");
	CHECK_STR(sha_hex("", 0, hex), "e3b0c44298fc1c149afbf4c8996fb924"
	    "27ae41e4649b934ca495991b7852b855");
	CHECK_STR(sha_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnop"
	    "nopq", 56, hex), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167"
	    "f6ecedd419db06c1");
	million = malloc(1000000);
	CHECK(million != NULL);
	memset(million, 'a', 1000000);
	sha256_init(&s);
	for (size_t i = 0; i < 1000000; i += 999)	/* uneven pieces */
		sha256_update(&s, million + i, i + 999 > 1000000 ?
		    1000000 - i : 999);
	sha256_final(&s, d);
	free(million);
	hex_of(d, sizeof(d), hex);
	CHECK_STR(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d"
	    "39ccc7112cd0");
}

/* RFC 4231 test cases 1, 2 and 6 (a key longer than a block). */
static void
t_hmac_sha256_matches_rfc_4231(void)
{
	unsigned char key[131], d[SHA256_LEN];
	char hex[2 * SHA256_LEN + 1];
	struct hmac256 m;

	memset(key, 0x0b, 20);
	hmac256_init(&m, key, 20);
	hmac256_update(&m, "Hi There", 8);
	hmac256_final(&m, d);
	hex_of(d, sizeof(d), hex);
	CHECK_STR(hex, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9"
	    "376c2e32cff7");
	hmac256_init(&m, "Jefe", 4);
	hmac256_update(&m, "what do ya want for nothing?", 28);
	hmac256_final(&m, d);
	hex_of(d, sizeof(d), hex);
	CHECK_STR(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec"
	    "58b964ec3843");
	memset(key, 0xaa, sizeof(key));
	hmac256_init(&m, key, sizeof(key));
	hmac256_update(&m, "Test Using Larger Than Block-Size Key - Hash Key "
	    "First", 54);
	hmac256_final(&m, d);
	hex_of(d, sizeof(d), hex);
	CHECK_STR(hex, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546"
	    "040f0ee37f54");
}

static char *
filtered(const char *q, const char *ignore, const char *only)
{
	static char out[256];
	char *f = keyrule_query(q, ignore, only);

	snprintf(out, sizeof(out), "%s", f != NULL ? f : "(null)");
	free(f);
	return out;
}

static void
t_ignored_parameters_are_dropped_and_the_rest_keep_their_order(void)
{
	const char *ign = "_, utm_*, fbclid";

	CHECK_STR(filtered("id=7&_=123&utm_source=x&b=2", ign, NULL), "id=7&b=2");
	CHECK_STR(filtered("utm_=1&utm=2&fbclid&fbclidx=1", ign, NULL),
	    "utm=2&fbclidx=1");
	CHECK_STR(filtered("_=1&utm_a=2", ign, NULL), "");
	CHECK_STR(filtered("", ign, NULL), "");
	/* Compared in the key's normal form: %5F is '_'. */
	CHECK_STR(filtered("utm%5Fsource=x&id=1", ign, NULL), "id=1");
	CHECK_STR(filtered("a=1&&b=2", "", NULL), "a=1&b=2");
	/* key_query: only the names listed count. */
	CHECK_STR(filtered("x=1&id=7&page=2&session=z", NULL, "id, page"),
	    "id=7&page=2");
	CHECK_STR(filtered("x=1", NULL, "id"), "");
	/* Names an origin reads as a listed one are kept, not dropped. */
	CHECK_STR(filtered("id=1&ID=2", NULL, "id"), "id=1&ID=2");
	CHECK_STR(filtered("id=1&id%5B%5D=2", NULL, "id"), "id=1&id%5B%5D=2");
	CHECK_STR(filtered("id=1&id[]=2&id[0]=3", NULL, "id"),
	    "id=1&id%5B%5D=2&id%5B0%5D=3");
	CHECK_STR(filtered("id=1&%20id=2&id%20=3&+id=4", NULL, "id"),
	    "id=1&%20id=2&id%20=3&+id=4");
	CHECK_STR(filtered("id=1&id%00=2", NULL, "id"), "id=1&id%00=2");
	/* Blanks around a name: before it or after it, a space or a tab. */
	CHECK_STR(filtered("id=1&id%09=2&%09id=3&id%09%20=4", NULL, "id"),
	    "id=1&id%09=2&%09id=3&id%09%20=4");
	/* A name of one byte, with or without a value, is a name. */
	CHECK_STR(filtered("_&id=1&_=2", "_", NULL), "id=1");
	CHECK_STR(filtered("a&x=1&b", NULL, "a"), "a");
	CHECK_STR(filtered("user_id=1&user.id=2&user%20id=3", NULL, "user_id"),
	    "user_id=1&user.id=2&user%20id=3");
	CHECK_STR(filtered("x=1&idx=2&i=3&d=4", NULL, "id"), "");
	CHECK_STR(filtered("p=1&PAGE2=2&pag=3", NULL, "page*"), "PAGE2=2");
	/* An ignore list drops its exact names only; the others are kept. */
	CHECK_STR(filtered("UTM_source=1&utm_x=2", "utm_*", NULL), "UTM_source=1");
	CHECK(keyrule_listed("a, b*", "bcd", 3) && !keyrule_listed("a, b*",
	    "ab", 2) && keyrule_listed("a, b*", "a", 1) &&
	    !keyrule_listed("a, b*", "aa", 2));
}

/*
 * Origins that split on ';' as well as '&' read "utm_x=a;id=666" as two
 * parameters: a piece is dropped only when all of its ';' parts are, and
 * kept whole otherwise (an origin that splits on '&' alone reads it as
 * one).
 */
static void
t_semicolons_cannot_cloak_a_parameter_the_key_drops(void)
{
	const char *ign = "_, utm_*";

	CHECK_STR(filtered("id=1&utm_x=a;id=666", ign, NULL),
	    "id=1&utm_x=a;id=666");
	CHECK_STR(filtered("id=1&utm_x=a;_=2", ign, NULL), "id=1");
	CHECK_STR(filtered("id=1;utm_x=a&_=3", ign, NULL), "id=1;utm_x=a");
	CHECK_STR(filtered("id=1&utm_x=a;", ign, NULL), "id=1");
	CHECK_STR(filtered("id=1&;utm_x=a", ign, NULL), "id=1&;utm_x=a");
	/* key_query: a piece with a listed part counts, whole. */
	CHECK_STR(filtered("x=2;id=5&y=1", NULL, "id"), "x=2;id=5");
	CHECK_STR(filtered("x=2;y=5&id=1", NULL, "id"), "id=1");
	CHECK_STR(filtered("a=1;b=2", "", NULL), "a=1;b=2");
}

static void
build(const struct key_parts *kp, char *key, char *tag)
{
	if (keyrule_build(kp, key, tag) == -1)
		abort();
}

static void
t_same_inputs_make_the_same_key_and_the_url_part_comes_first(void)
{
	struct key_parts kp = { .host = "app.test", .path = "/a", .query = "x=1",
	    .nheaders = 1, .header_names = { "Accept-Language" },
	    .header_values = { "  en-US,\t fr  " }, .post = 1,
	    .body_digest = "0123456789abcdef0123456789abcdef" };
	char k1[CACHE_KEY_MAX + 1], k2[CACHE_KEY_MAX + 1];
	char t1[KEYRULE_TAG_MAX + 1], t2[KEYRULE_TAG_MAX + 1];
	char url[CACHE_KEY_MAX + 1];

	build(&kp, k1, t1);
	build(&kp, k2, t2);
	CHECK_STR(k1, k2);
	CHECK_STR(t1, t2);
	CHECK_STR(k1, "app.test/a?x=1|h=accept-language:en-US%2C%20fr|m=POST"
	    "|b=0123456789abcdef0123456789abcdef");
	/* The tag is the URL key's, as a purge by URL builds it. */
	cache_key_build("app.test", "/a", "x=1", url);
	keyrule_url_tag(url, t2);
	CHECK_STR(t1, t2);
	CHECK(strncmp(t1, KEYRULE_TAG_PREFIX, strlen(KEYRULE_TAG_PREFIX)) == 0);
	/* No parts: the URL key itself, and no tag. */
	memset(&kp, 0, sizeof(kp));
	kp.host = "app.test";
	kp.path = "/a";
	build(&kp, k1, t1);
	CHECK_STR(k1, "app.test/a");
	CHECK_STR(t1, "");
}

static void
t_header_values_are_normalised_and_escaped(void)
{
	char v[64], k[CACHE_KEY_MAX + 1], t[KEYRULE_TAG_MAX + 1];
	struct key_parts kp = { .host = "h", .path = "/", .nheaders = 1,
	    .header_names = { "X-Tenant" }, .header_values = { "a|b,c%d" } };

	CHECK(keyrule_header_value("  a \t b  ", v, sizeof(v)) == 3);
	CHECK_STR(v, "a b");
	CHECK(keyrule_header_value("\t", v, sizeof(v)) == 0);
	CHECK(keyrule_header_value("abcdef", v, 4) == 3);
	build(&kp, k, t);
	CHECK_STR(k, "h/|h=x-tenant:a%7Cb%2Cc%25d");
	/* The URL part never holds a raw '|': a value cannot pose as one. */
	cache_key_build("h", "/a|h=x", "q=|", k);
	CHECK(strchr(k, KEYRULE_SEP) == NULL);
}

static void
t_long_parts_keep_the_key_bounded_and_distinct(void)
{
	char big[2000], big2[2000], path[3000];
	char k1[CACHE_KEY_MAX + 1], k2[CACHE_KEY_MAX + 1], t[KEYRULE_TAG_MAX + 1];
	struct key_parts kp = { .host = "h", .path = "/", .nheaders = 1,
	    .header_names = { "X-Big" }, .header_values = { big },
	    .credential_digest = "ffffffffffffffffffffffffffffffff" };

	memset(big, 'v', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big2, big, sizeof(big));
	big2[1500] = 'w';
	build(&kp, k1, t);
	kp.header_values[0] = big2;
	build(&kp, k2, t);
	CHECK(strlen(k1) <= CACHE_KEY_MAX && strstr(k1, "|h#") != NULL);
	CHECK(strcmp(k1, k2) != 0);
	/* A long URL ends in its hash before the parts, which stay whole. */
	memset(path, 'p', sizeof(path) - 1);
	path[0] = '/';
	path[sizeof(path) - 1] = '\0';
	kp.path = path;
	kp.nheaders = 0;
	build(&kp, k1, t);
	CHECK(strlen(k1) <= CACHE_KEY_MAX);
	CHECK(strstr(k1, "|c=ffffffffffffffffffffffffffffffff") != NULL);
	CHECK(strchr(k1, '#') != NULL);
}

/*
 * The header values are written out in the key up to half the parts'
 * room, and stand as their digest past it: at the bound, one byte past
 * it. A digested value is normalised as a written one: a space before
 * its last character counts.
 */
static void
t_header_values_are_written_out_up_to_half_the_parts_room(void)
{
	char v[KEYRULE_VALUE_MAX], w[KEYRULE_VALUE_MAX + 8];
	char k1[CACHE_KEY_MAX + 1], k2[CACHE_KEY_MAX + 1], t[KEYRULE_TAG_MAX + 1];
	struct key_parts kp = { .host = "h", .path = "/", .nheaders = 1,
	    .header_names = { "X" }, .header_values = { v } };
	size_t fits = KEYRULE_PARTS_MAX / 2 - strlen("h=x:");

	memset(v, 'v', fits);
	v[fits] = '\0';
	build(&kp, k1, t);
	CHECK(strstr(k1, "|h=x:vvv") != NULL && strstr(k1, "|h#") == NULL);
	v[fits] = 'v';
	v[fits + 1] = '\0';
	build(&kp, k1, t);
	CHECK(strstr(k1, "|h#") != NULL && strstr(k1, "|h=") == NULL);
	/* Long values, digested: "... z" is not "...z". */
	memset(w, 'w', KEYRULE_VALUE_MAX);
	memcpy(w + KEYRULE_VALUE_MAX, " z", 3);
	kp.header_values[0] = w;
	build(&kp, k1, t);
	memcpy(w + KEYRULE_VALUE_MAX, "z", 2);
	build(&kp, k2, t);
	CHECK(strstr(k1, "|h#") != NULL && strcmp(k1, k2) != 0);
	/* A value's normal form fills its room exactly. */
	CHECK(keyrule_header_value("a b", w, 4) == 3 && strcmp(w, "a b") == 0);
	CHECK(keyrule_header_value(" a \t b ", w, 4) == 3 && strcmp(w, "a b") == 0);
}

/* The credential's digest as proxy_key.c makes it. */
static void
cred_digest(const char *token, char hex[KEYRULE_DIGEST_HEX + 1])
{
	struct keyrule_digest d;

	keyrule_digest_init(&d, secret, strlen(secret), "credential");
	keyrule_digest_part(&d, "a", 1);
	keyrule_digest_part(&d, token, strlen(token));
	keyrule_digest_hex(&d, hex);
}

static void
t_the_credential_is_keyed_only_as_a_digest(void)
{
	const char *a = "Bearer eyJhbGciOiJIUzI1NiJ9.alice", *b =
	    "Bearer eyJhbGciOiJIUzI1NiJ9.bob";
	char ha[KEYRULE_DIGEST_HEX + 1], hb[KEYRULE_DIGEST_HEX + 1];
	char ka[CACHE_KEY_MAX + 1], kb[CACHE_KEY_MAX + 1], t[KEYRULE_TAG_MAX + 1];
	struct key_parts kp = { .host = "h", .path = "/me" };
	struct keyrule_digest d;

	cred_digest(a, ha);
	cred_digest(b, hb);
	CHECK(strcmp(ha, hb) != 0);
	kp.credential_digest = ha;
	build(&kp, ka, t);
	kp.credential_digest = hb;
	build(&kp, kb, t);
	CHECK(strcmp(ka, kb) != 0);
	CHECK(strstr(ka, "alice") == NULL && strstr(ka, "eyJ") == NULL &&
	    strstr(ka, "Bearer") == NULL);
	CHECK(strlen(ha) == KEYRULE_DIGEST_HEX);
	cred_digest(a, hb);
	CHECK_STR(ha, hb);	/* the same token: the same key */
	/* Another secret: another digest. */
	keyrule_digest_init(&d, "another secret!!", 16, "credential");
	keyrule_digest_part(&d, "a", 1);
	keyrule_digest_part(&d, a, strlen(a));
	keyrule_digest_hex(&d, hb);
	CHECK(strcmp(ha, hb) != 0);
	/* Parts are length-prefixed: "ab"+"c" is not "a"+"bc". */
	keyrule_digest_init(&d, secret, strlen(secret), "x");
	keyrule_digest_part(&d, "ab", 2);
	keyrule_digest_part(&d, "c", 1);
	keyrule_digest_hex(&d, ha);
	keyrule_digest_init(&d, secret, strlen(secret), "x");
	keyrule_digest_part(&d, "a", 1);
	keyrule_digest_part(&d, "bc", 2);
	keyrule_digest_hex(&d, hb);
	CHECK(strcmp(ha, hb) != 0);
}

static enum graphql_kind
gql(const char *body, char hex[KEYRULE_DIGEST_HEX + 1])
{
	struct keyrule_digest d;
	enum graphql_kind k;

	keyrule_digest_init(&d, secret, strlen(secret), "graphql");
	k = graphql_read(body, strlen(body), &d);
	keyrule_digest_hex(&d, hex);
	return k;
}

static void
t_graphql_tells_queries_from_mutations_and_subscriptions(void)
{
	char h[KEYRULE_DIGEST_HEX + 1];

	CHECK(gql("{\"query\": \"{ me { id } }\"}", h) == GRAPHQL_QUERY);
	CHECK(gql("{\"query\": \"query Q { a }\", \"operationName\": \"Q\"}",
	    h) == GRAPHQL_QUERY);
	CHECK(gql("{\"query\": \"# mutation in a comment\\n{ a }\"}", h) ==
	    GRAPHQL_QUERY);
	CHECK(gql("{\"query\": \"{ a(s: \\\"mutation\\\") { b } }\"}", h) ==
	    GRAPHQL_QUERY);
	CHECK(gql("{\"query\": \"{ mutation subscription }\"}", h) ==
	    GRAPHQL_QUERY);	/* field names, inside a selection */
	CHECK(gql("{\"query\": \"mutation { like(id: 7) }\"}", h) ==
	    GRAPHQL_MUTATION);
	CHECK(gql("{\"query\": \"  mutation M($a: Int) { like(id: $a) }\"}",
	    h) == GRAPHQL_MUTATION);
	CHECK(gql("{\"query\": \"subscription { tick }\"}", h) ==
	    GRAPHQL_MUTATION);
	CHECK(gql("{\"query\": \"query A { a } mutation B { b }\", "
	    "\"operationName\": \"A\"}", h) == GRAPHQL_MUTATION);
	CHECK(gql("{\"query\": \"\\u006dutation { x }\"}", h) ==
	    GRAPHQL_MUTATION);	/* escaped in JSON: still one */
	CHECK(gql("{\"query\": \"fragment F on Q { a }\"}", h) ==
	    GRAPHQL_INVALID);
	CHECK(gql("{\"query\": \"{ a \"}", h) == GRAPHQL_INVALID);
	CHECK(gql("[{\"query\": \"{ a }\"}]", h) == GRAPHQL_INVALID);
	CHECK(gql("{\"query\": \"{ a }\", \"query\": \"mutation { b }\"}", h) ==
	    GRAPHQL_INVALID);
	CHECK(gql("{\"query\": \"{ a }\"} x", h) == GRAPHQL_INVALID);
	CHECK(gql("{\"query\": 1}", h) == GRAPHQL_INVALID);
	CHECK(gql("{\"query\": \"{ a }\", \"variables\": [1]}", h) ==
	    GRAPHQL_INVALID);
	CHECK(gql("{\"extensions\": {\"persistedQuery\": {}}}", h) ==
	    GRAPHQL_INVALID);
	CHECK(gql("{\"query\": \"{ a }\", \"x\": tru}", h) == GRAPHQL_INVALID);
}

/*
 * Parsers that let the last of two members win read the member names
 * decoded, and some (Go's encoding/json, .NET's web defaults) regardless
 * of case: a top-level name that is not plain, or that is a known name in
 * another case, leaves the body uncached, whichever member comes first.
 */
static void
t_graphql_member_names_cannot_hide_a_second_query(void)
{
	char h[KEYRULE_DIGEST_HEX + 1];

	CHECK(gql("{\"query\":\"{ a }\",\"qu\\u0065ry\":\"mutation { x }\"}",
	    h) == GRAPHQL_INVALID);
	CHECK(gql("{\"qu\\u0065ry\":\"mutation { x }\",\"query\":\"{ a }\"}",
	    h) == GRAPHQL_INVALID);
	CHECK(gql("{\"query\":\"{ a }\",\"QUERY\":\"mutation { x }\"}", h) ==
	    GRAPHQL_INVALID);
	CHECK(gql("{\"Query\":\"mutation { x }\"}", h) == GRAPHQL_INVALID);
	CHECK(gql("{\"query\":\"{ a }\",\"v\\u0061riables\":{\"id\":1}}", h) ==
	    GRAPHQL_INVALID);
	CHECK(gql("{\"query\":\"query A { a } query B { b }\","
	    "\"operationName\":\"A\",\"operation\\u004eame\":\"B\"}", h) ==
	    GRAPHQL_INVALID);
	CHECK(gql("{\"query\":\"{ a }\",\"operationname\":\"B\"}", h) ==
	    GRAPHQL_INVALID);
	CHECK(gql("{\"query\":\"{ a }\",\"ext\xc3\xa9\":1}", h) ==
	    GRAPHQL_INVALID);
	/* Escapes in values are decoded, and other members still pass. */
	CHECK(gql("{\"query\":\"{ \\u0061 }\",\"extensions\":{\"p\\u0071\":1}}",
	    h) == GRAPHQL_QUERY);
}

/* graphql-js runs a document's only operation for an absent or null
 * operationName, and none for "": "" is another key. */
static void
t_graphql_empty_operation_name_is_not_an_absent_one(void)
{
	char a[KEYRULE_DIGEST_HEX + 1], b[KEYRULE_DIGEST_HEX + 1];
	char c[KEYRULE_DIGEST_HEX + 1];

	CHECK(gql("{\"query\":\"{ a }\"}", a) == GRAPHQL_QUERY);
	CHECK(gql("{\"query\":\"{ a }\",\"operationName\":null}", b) ==
	    GRAPHQL_QUERY);
	CHECK_STR(a, b);
	CHECK(gql("{\"query\":\"{ a }\",\"operationName\":\"\"}", c) ==
	    GRAPHQL_QUERY);
	CHECK(strcmp(a, c) != 0);
	CHECK(gql("{\"query\":\"{ a }\",\"operationName\":\"Q\"}", b) ==
	    GRAPHQL_QUERY);
	CHECK(strcmp(b, c) != 0 && strcmp(a, b) != 0);
}

/* GraphQL over HTTP: requests are application/json (charset utf-8). */
static void
t_graphql_bodies_are_read_only_as_json(void)
{
	CHECK(graphql_media_type("application/json"));
	CHECK(graphql_media_type("Application/JSON"));
	CHECK(graphql_media_type("application/json; charset=utf-8"));
	CHECK(graphql_media_type(" application/json ;charset=\"UTF-8\" "));
	CHECK(!graphql_media_type(NULL));
	CHECK(!graphql_media_type(""));
	CHECK(!graphql_media_type("application/graphql"));
	CHECK(!graphql_media_type("application/graphql-response+json"));
	CHECK(!graphql_media_type("application/jsonx"));
	CHECK(!graphql_media_type("application/x-www-form-urlencoded"));
	CHECK(!graphql_media_type("text/plain"));
	CHECK(!graphql_media_type("application/json; charset=utf-16"));
	CHECK(!graphql_media_type("application/json; charset=utf-8; a=b"));
	CHECK(!graphql_media_type("application/json; boundary=x"));
	CHECK(!graphql_media_type("application/json, text/plain"));
}

static void
t_graphql_keys_on_query_operation_variables_and_every_other_member(void)
{
	char a[KEYRULE_DIGEST_HEX + 1], b[KEYRULE_DIGEST_HEX + 1];
	char c[KEYRULE_DIGEST_HEX + 1];

	CHECK(gql("{\"query\":\"{ a }\",\"variables\":{\"id\":\"7\"}}", a) ==
	    GRAPHQL_QUERY);
	CHECK(gql(" { \"variables\" : { \"id\" : \"7\" } , \"query\" : "
	    "\"{ a }\" } ", b) == GRAPHQL_QUERY);
	CHECK_STR(a, b);	/* spacing, order: the same key */
	/* A member a server may run instead of the text, or act on. */
	CHECK(gql("{\"query\":\"{ a }\",\"variables\":{\"id\":\"7\"},"
	    "\"extensions\": {\"t\": 1}}", b) == GRAPHQL_QUERY);
	CHECK(strcmp(a, b) != 0);
	CHECK(gql("{\"query\":\"{ a }\",\"variables\":{\"id\":\"7\"},"
	    "\"extensions\" : { \"t\" : 1 }}", c) == GRAPHQL_QUERY);
	CHECK_STR(b, c);	/* its spacing does not count */
	CHECK(gql("{\"query\":\"{ a }\",\"variables\":{\"id\":\"7\"},"
	    "\"extensions\": {\"t\": 2}}", c) == GRAPHQL_QUERY);
	CHECK(strcmp(b, c) != 0);	/* its value does */
	CHECK(gql("{\"query\":\"{ a }\",\"variables\":{\"id\":\"7\"},"
	    "\"documentId\": \"x\"}", b) == GRAPHQL_QUERY);
	CHECK(strcmp(a, b) != 0);
	CHECK(gql("{\"query\":\"{ a }\",\"variables\":{\"id\":\"7\"},"
	    "\"doc_id\": \"x\"}", c) == GRAPHQL_QUERY);
	CHECK(strcmp(b, c) != 0 && strcmp(a, c) != 0);	/* its name does */
	CHECK(gql("{\"query\":\"{ a }\",\"id\":1,\"id\":2}", c) ==
	    GRAPHQL_INVALID);	/* named twice */
	CHECK(gql("{\"query\":\"{ a }\",\"a\":1,\"b\":1,\"c\":1,\"d\":1,"
	    "\"e\":1,\"f\":1,\"g\":1,\"h\":1,\"i\":1,\"j\":1,\"k\":1,\"l\":1,"
	    "\"m\":1,\"n\":1,\"o\":1,\"p\":1}", c) == GRAPHQL_QUERY);
	CHECK(gql("{\"query\":\"{ a }\",\"a\":1,\"b\":1,\"c\":1,\"d\":1,"
	    "\"e\":1,\"f\":1,\"g\":1,\"h\":1,\"i\":1,\"j\":1,\"k\":1,\"l\":1,"
	    "\"m\":1,\"n\":1,\"o\":1,\"p\":1,\"q\":1}", c) ==
	    GRAPHQL_INVALID);	/* past GRAPHQL_EXTRA_MAX */
	CHECK(gql("{\"query\":\"{ a }\",\"variables\":{\"id\":\"8\"}}", b) ==
	    GRAPHQL_QUERY);
	CHECK(strcmp(a, b) != 0);
	CHECK(gql("{\"query\":\"{ a }\",\"variables\":{\"id\":\"7 \"}}", b) ==
	    GRAPHQL_QUERY);
	CHECK(strcmp(a, b) != 0);	/* spaces inside strings count */
	CHECK(gql("{\"query\":\"{ a }\",\"variables\":{\"id\":\"7\"},"
	    "\"operationName\":\"X\"}", b) == GRAPHQL_QUERY);
	CHECK(strcmp(a, b) != 0);
	CHECK(gql("{\"query\":\"{ b }\",\"variables\":{\"id\":\"7\"}}", b) ==
	    GRAPHQL_QUERY);
	CHECK(strcmp(a, b) != 0);
	CHECK(gql("{\"query\":\"{ a }\",\"variables\":null}", a) ==
	    GRAPHQL_QUERY);
	CHECK(gql("{\"query\":\"{ a }\"}", b) == GRAPHQL_QUERY);
	CHECK_STR(a, b);
}

/*
 * Whitespace outside strings does not count; inside, it does, after an
 * escaped quote too: at the start, the middle and the end of a string, a
 * key or a value, and after an escaped backslash (which ends no string).
 */
static void
t_graphql_escaped_quotes_keep_the_spaces_after_them(void)
{
	static const char *const pairs[][2] = {
		{ "{\"query\":\"{ a }\",\"variables\":{\"v\":\"a\\\" b\"}}",
		  "{\"query\":\"{ a }\",\"variables\":{\"v\":\"a\\\"b\"}}" },
		{ "{\"query\":\"{ a }\",\"variables\":{\"v\":\"\\\" b\"}}",
		  "{\"query\":\"{ a }\",\"variables\":{\"v\":\"\\\"b\"}}" },
		{ "{\"query\":\"{ a }\",\"variables\":{\"v\":\"a\\\" \"}}",
		  "{\"query\":\"{ a }\",\"variables\":{\"v\":\"a\\\"\"}}" },
		{ "{\"query\":\"{ a }\",\"variables\":{\"a\\\" b\":1}}",
		  "{\"query\":\"{ a }\",\"variables\":{\"a\\\"b\":1}}" },
		{ "{\"query\":\"{ a }\",\"extensions\":{\"v\":\"a\\\" b\"}}",
		  "{\"query\":\"{ a }\",\"extensions\":{\"v\":\"a\\\"b\"}}" },
		{ "{\"query\":\"{ a }\",\"variables\":{\"v\":\"a\\\\\", \"w\":1}}",
		  "{\"query\":\"{ a }\",\"variables\":{\"v\":\"a\\\\ \",\"w\":1}}" },
	};
	char a[KEYRULE_DIGEST_HEX + 1], b[KEYRULE_DIGEST_HEX + 1];

	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		CHECK(gql(pairs[i][0], a) == GRAPHQL_QUERY);
		CHECK(gql(pairs[i][1], b) == GRAPHQL_QUERY);
		if (strcmp(a, b) == 0)
			printf("# one key: %s and %s\n", pairs[i][0], pairs[i][1]);
		CHECK(strcmp(a, b) != 0);
	}
	/* Between tokens, after a string that ends in an escaped backslash. */
	CHECK(gql("{\"query\":\"{ a }\",\"variables\":{\"v\":\"a\\\\\" , "
	    "\"w\" : 1}}", a) == GRAPHQL_QUERY);
	CHECK(gql("{\"query\":\"{ a }\",\"variables\":{\"v\":\"a\\\\\",\"w\":1}}",
	    b) == GRAPHQL_QUERY);
	CHECK_STR(a, b);
}

/*
 * A query is keyed as decoded: an escape, its hex digits in either case,
 * names the character a server reads (of 1, 2, 3 or 4 UTF-8 bytes, a
 * surrogate pair for the last), and keys as that character written out;
 * what is not an escape (a digit that is not hex, too few digits, a lone
 * surrogate) leaves the body unread.
 */
static void
t_graphql_escapes_key_as_the_characters_they_name(void)
{
	static const char *const same[][2] = {
		{ "{\"query\":\"{ \\u004A\\u004a }\"}", "{\"query\":\"{ JJ }\"}" },
		{ "{\"query\":\"{ a(s: \\\"\\u00e9\\u00C9\\\") }\"}",
		  "{\"query\":\"{ a(s: \\\"\xc3\xa9\xc3\x89\\\") }\"}" },
		{ "{\"query\":\"{ a(s: \\\"\\u20AC\\u20ac\\\") }\"}",
		  "{\"query\":\"{ a(s: \\\"\xe2\x82\xac\xe2\x82\xac\\\") }\"}" },
		{ "{\"query\":\"{ a(s: \\\"\\uD83D\\uDE00\\\") }\"}",
		  "{\"query\":\"{ a(s: \\\"\xf0\x9f\x98\x80\\\") }\"}" },
		{ "{\"query\":\"{ a(s: \\\"\\udbff\\udfff\\\") }\"}",
		  "{\"query\":\"{ a(s: \\\"\xf4\x8f\xbf\xbf\\\") }\"}" },
		{ "{\"query\":\"{ a(s: \\\"\\ud800\\udc00\\\") }\"}",
		  "{\"query\":\"{ a(s: \\\"\xf0\x90\x80\x80\\\") }\"}" },
	};
	static const char *const unread[] = {
		"{\"query\":\"{ a }\",\"x\":\"\\u00zz\"}",
		"{\"query\":\"{ a }\",\"x\":\"\\u00G0\"}",
		"{\"query\":\"{ a }\",\"x\":\"\\u0g00\"}",
		"{\"query\":\"{ a }\",\"x\":\"\\u12\"}",
		"{\"query\":\"{ a }\",\"x\":\"\\udc00\"}",
		"{\"query\":\"{ a }\",\"x\":\"\\ud800x\"}",
		"{\"query\":\"{ a }\",\"x\":\"\\ud800\\u0041\"}",
		"{\"query\":\"{ a }\",\"x\":\"\\x41\"}",
	};
	char a[KEYRULE_DIGEST_HEX + 1], b[KEYRULE_DIGEST_HEX + 1];

	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
		CHECK(gql(same[i][0], a) == GRAPHQL_QUERY);
		CHECK(gql(same[i][1], b) == GRAPHQL_QUERY);
		if (strcmp(a, b) != 0)
			printf("# two keys: %s and %s\n", same[i][0], same[i][1]);
		CHECK_STR(a, b);
	}
	for (size_t i = 0; i < sizeof(unread) / sizeof(unread[0]); i++) {
		if (gql(unread[i], a) != GRAPHQL_INVALID)
			printf("# read: %s\n", unread[i]);
		CHECK(gql(unread[i], a) == GRAPHQL_INVALID);
	}
	/* A mutation spelled with escapes in upper case is one still. */
	CHECK(gql("{\"query\": \"\\u006Dutation { x }\"}", a) ==
	    GRAPHQL_MUTATION);
	CHECK(gql("{\"query\": \"\\u006D\\u0055TATION { x }\"}", a) ==
	    GRAPHQL_QUERY);	/* mUTATION is no keyword: a name */
}

/* RFC 8259 6: numbers of any length and sign, a fraction, an exponent;
 * no leading zero, nothing empty on either side of '.' or 'e'. And JSON
 * nested at most GRAPHQL_DEPTH_MAX deep. */
static void
t_graphql_reads_json_numbers_and_nesting_to_their_bounds(void)
{
	static const char *const numbers[] = { "0", "-0", "7", "1990", "-12",
	    "0.5", "10.25", "1e9", "1E+09", "-2.5e-3", "98765432109876543210" };
	static const char *const not_numbers[] = { "01", "-", "1.", ".5", "1e",
	    "1e+", "+1", "0x10", "1.2.3", "--1", "9a" };
	char body[512], a[KEYRULE_DIGEST_HEX + 1], b[KEYRULE_DIGEST_HEX + 1];
	size_t n;

	for (size_t i = 0; i < sizeof(numbers) / sizeof(numbers[0]); i++) {
		snprintf(body, sizeof(body), "{\"query\":\"{ a }\",\"variables\":"
		    "{\"n\":%s,\"m\":[%s, %s]}}", numbers[i], numbers[i],
		    numbers[i]);
		if (gql(body, a) != GRAPHQL_QUERY)
			printf("# not read: %s\n", body);
		CHECK(gql(body, a) == GRAPHQL_QUERY);
	}
	for (size_t i = 0; i < sizeof(not_numbers) / sizeof(not_numbers[0]);
	    i++) {
		snprintf(body, sizeof(body), "{\"query\":\"{ a }\",\"variables\":"
		    "{\"n\":%s}}", not_numbers[i]);
		if (gql(body, a) != GRAPHQL_INVALID)
			printf("# read: %s\n", body);
		CHECK(gql(body, a) == GRAPHQL_INVALID);
	}
	CHECK(gql("{\"query\":\"{ a }\",\"variables\":{\"n\":1990}}", a) ==
	    GRAPHQL_QUERY);
	CHECK(gql("{\"query\":\"{ a }\",\"variables\":{\"n\":1991}}", b) ==
	    GRAPHQL_QUERY);
	CHECK(strcmp(a, b) != 0);
	/* A member's value is at depth 1: 63 arrays around a number reach
	 * GRAPHQL_DEPTH_MAX, 64 go past it. */
	for (int k = GRAPHQL_DEPTH_MAX - 1; k <= GRAPHQL_DEPTH_MAX; k++) {
		n = (size_t)snprintf(body, sizeof(body), "{\"query\":\"{ a }\","
		    "\"x\":");
		for (int i = 0; i < k; i++)
			body[n++] = '[';
		body[n++] = '1';
		for (int i = 0; i < k; i++)
			body[n++] = ']';
		memcpy(body + n, "}", 2);
		CHECK(gql(body, a) == (k < GRAPHQL_DEPTH_MAX ? GRAPHQL_QUERY :
		    GRAPHQL_INVALID));
	}
}

static void
t_graphql_answers_with_errors(void)
{
	static const char *const failed[] = {
		"{\"errors\":[{\"message\":\"x\"}]}",
		"{\"data\":null,\"errors\":[{}]}",
		" { \"data\" : {\"a\":1} , \"errors\" : [ 1 ] } ",
		"{\"errors\":{}}", "{\"errors\":\"x\"}", "{\"errors\":0}",
	};
	static const char *const fine[] = {
		"{\"data\":{\"a\":1}}", "{\"data\":{},\"errors\":[]}",
		"{\"errors\": [ ] ,\"data\":1}", "{\"errors\":null}",
		"{\"Errors\":[1]}", "{\"data\":{\"errors\":[1]}}",
		"[{\"errors\":[1]}]", "not json", "", "{\"errors\"",
	};

	for (size_t i = 0; i < sizeof(failed) / sizeof(failed[0]); i++)
		CHECK(graphql_errors(failed[i], strlen(failed[i])));
	for (size_t i = 0; i < sizeof(fine) / sizeof(fine[0]); i++)
		CHECK(!graphql_errors(fine[i], strlen(fine[i])));
}

static void
t_graphql_get_documents(void)
{
	CHECK(graphql_document("{ a }", 5) == GRAPHQL_QUERY);
	CHECK(graphql_document("query Q { a }", 13) == GRAPHQL_QUERY);
	CHECK(graphql_document("mutation { a }", 14) == GRAPHQL_MUTATION);
	CHECK(graphql_document("subscription { a }", 18) == GRAPHQL_MUTATION);
	CHECK(graphql_document("{ a", 3) == GRAPHQL_INVALID);
	CHECK(graphql_document("", 0) == GRAPHQL_INVALID);
}

int
main(void)
{
	RUN(t_sha256_matches_the_published_vectors);
	RUN(t_hmac_sha256_matches_rfc_4231);
	RUN(t_ignored_parameters_are_dropped_and_the_rest_keep_their_order);
	RUN(t_semicolons_cannot_cloak_a_parameter_the_key_drops);
	RUN(t_same_inputs_make_the_same_key_and_the_url_part_comes_first);
	RUN(t_header_values_are_normalised_and_escaped);
	RUN(t_long_parts_keep_the_key_bounded_and_distinct);
	RUN(t_header_values_are_written_out_up_to_half_the_parts_room);
	RUN(t_the_credential_is_keyed_only_as_a_digest);
	RUN(t_graphql_tells_queries_from_mutations_and_subscriptions);
	RUN(t_graphql_keys_on_query_operation_variables_and_every_other_member);
	RUN(t_graphql_answers_with_errors);
	RUN(t_graphql_get_documents);
	RUN(t_graphql_member_names_cannot_hide_a_second_query);
	RUN(t_graphql_empty_operation_name_is_not_an_absent_one);
	RUN(t_graphql_bodies_are_read_only_as_json);
	RUN(t_graphql_escaped_quotes_keep_the_spaces_after_them);
	RUN(t_graphql_escapes_key_as_the_characters_they_name);
	RUN(t_graphql_reads_json_numbers_and_nesting_to_their_bounds);
	return unit_exit();
}
