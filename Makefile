# SPDX-License-Identifier: MIT
# Corral: caching HTTP reverse proxy that stops cache stampedes.
#
#   make            build build/release/corral (installs missing packages first)
#   make run        build, then start redis-server, the demo origin and corral
#   make install    the binary, config, manual pages, systemd unit and
#                   logrotate snippet under DESTDIR and PREFIX (see below)
#   make deb        build/corral_VERSION-REVISION_ARCH.deb
#   make test       unit + scenario tests under AddressSanitizer and UBSan
#   make test-mutants  mutation tests: every mutant of every module is caught
#   make test-mutants-sampled MODULE=FILE  mutations drawn at random from FILE
#   make bench      benchmark against nginx and Varnish (see bench/)
#   make bench-codec   what each content coding and level costs on JSON
#   make clean

VERSION := 0.1.0
DEB_REVISION := 1	# the package's own: corral_VERSION-REVISION_ARCH.deb
DEB_MAINTAINER ?= Corral maintainers <maintainers@users.noreply.a-seed-d6bbd95e.example>
# libevent's event loop and buffers (libevent_core) and its OpenSSL
# bufferevents: not its HTTP layer (libevent_extra's evhttp); the server
# is Corral's own (proxy/proxy_conn.c). --as-needed keeps the full
# libevent that libevent_openssl's pkg-config names out of the binary.
# libpq is the change feed's (changes/); zlib, brotli and zstd are the
# content codings' (codec/).
PKGS    := libevent_core libevent_openssl libssl libcrypto hiredis libcurl inih libpq \
           zlib libbrotlienc libbrotlidec libzstd
JOBS    := $(shell nproc 2>/dev/null || echo 1)

CC      ?= cc
WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -Wpointer-arith -Wformat=2 -Wno-unused-parameter
DEFS    := -std=c11 -D_GNU_SOURCE -DCORRAL_VERSION='"$(VERSION)"' -I. -g
BASE    := $(DEFS) $(WARN)

PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = -Wl,--as-needed $(shell pkg-config --libs $(PKGS) 2>/dev/null)

SRC      := $(wildcard common/*.c cache/*.c upstream/*.c conf/*.c proxy/*.c auth/*.c changes/*.c codec/*.c)
# The configuration alone, for the man page's key list and the fuzzers
# (with the JWT code it loads jwt_keys_file with, and the content codings
# its checks ask: store_encoding, compress_types).
CONF_SRC := $(wildcard conf/*.c auth/*.c codec/*.c) common/json.c common/base64.c common/digest.c
GEN_SRC  := build/gen/dashboard.c
LIB_SRC  := $(filter-out proxy/main.c,$(SRC)) $(GEN_SRC)
UNIT_SRC := $(wildcard tests/unit/test_*.c)

REL_FLAGS  := -O2
ASAN_FLAGS := -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

# The release build takes the distribution's flags (dpkg-buildflags, every
# hardening feature: stack protector, fortify, relro, bind now); CFLAGS,
# CPPFLAGS and LDFLAGS from the environment or the command line replace
# them. The ASan build takes none of them (fortify and ASan do not mix).
DEB_BUILD_MAINT_OPTIONS ?= hardening=+all
buildflag = $(shell DEB_BUILD_MAINT_OPTIONS='$(DEB_BUILD_MAINT_OPTIONS)' \
	dpkg-buildflags --get $(1) 2>/dev/null)
ifeq ($(origin CFLAGS),undefined)
CFLAGS := $(call buildflag,CFLAGS)
endif
ifeq ($(origin CPPFLAGS),undefined)
CPPFLAGS := $(call buildflag,CPPFLAGS)
endif
ifeq ($(origin LDFLAGS),undefined)
LDFLAGS := $(call buildflag,LDFLAGS)
endif

# The project's warnings come after the distribution's flags: dpkg's
# -Wformat would otherwise undo -Wformat=2.
REL_CC   = $(CC) $(DEFS) $(REL_FLAGS) $(CPPFLAGS) $(CFLAGS) $(WARN) $(PKG_CFLAGS)
REL_LINK = $(CC) $(REL_FLAGS) $(CFLAGS) $(LDFLAGS)
ASAN_CC  = $(CC) $(BASE) $(ASAN_FLAGS) $(PKG_CFLAGS)

# Objects depend on the commands that build them, kept in build/*/FLAGS
# (rewritten only when they change): a new VERSION, CFLAGS or compiler
# rebuilds everything, as a version bump must.
flags_stamp = $(shell mkdir -p $(dir $(1)))$(file >$(1).new,$(2))$(shell \
	cmp -s $(1).new $(1) && rm -f $(1).new || mv -f $(1).new $(1))
ifeq ($(filter clean,$(MAKECMDGOALS)),)
$(call flags_stamp,build/release/FLAGS,$(REL_CC) | $(REL_LINK))
$(call flags_stamp,build/asan/FLAGS,$(ASAN_CC))
endif

REL_OBJ  := $(LIB_SRC:%.c=build/release/%.o)
ASAN_OBJ := $(LIB_SRC:%.c=build/asan/%.o)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=build/asan/unit/%)
# The unit tests' own origins may use libevent's HTTP layer; Corral does not.
UNIT_LIBS = $(shell pkg-config --libs libevent_extra 2>/dev/null)

.PHONY: all deps test-deps run test test-build test-mutants test-mutants-sampled unit \
        scenarios bench bench-codec clean check-boundaries check-size man install deb

all: deps build/release/corral man

# What building and running need; the tests' own packages come from test-deps.
deps:
	@scripts/install-deps

test-deps:
	@scripts/install-deps test

# The admin dashboard, embedded as a C array (with od and sed: xxd may be missing).
build/gen/dashboard.c: proxy/dashboard.html
	@mkdir -p $(dir $@)
	@{ printf '#include "proxy/dashboard.h"\n\nconst unsigned char dashboard_html[] = {\n'; \
	  od -An -v -tx1 $< | sed -e 's/ \([0-9a-f][0-9a-f]\)/0x\1,/g' -e 's/^/\t/'; \
	  printf '};\nconst size_t dashboard_html_len = sizeof(dashboard_html);\n'; } > $@.tmp
	@mv $@.tmp $@

build/release/%.o: %.c $(wildcard */*.h) build/release/FLAGS
	@mkdir -p $(dir $@)
	$(REL_CC) -c $< -o $@

build/asan/%.o: %.c $(wildcard */*.h) build/asan/FLAGS
	@mkdir -p $(dir $@)
	$(ASAN_CC) -c $< -o $@

build/release/corral: $(REL_OBJ) build/release/proxy/main.o build/release/FLAGS
	$(REL_LINK) -o $@ $(filter %.o,$^) $(PKG_LIBS) -lm

# The release build with frame pointers, for perf record -g (bench/profile).
build/profile/%.o: %.c $(wildcard */*.h)
	@mkdir -p $(dir $@)
	$(CC) $(BASE) $(REL_FLAGS) -fno-omit-frame-pointer $(PKG_CFLAGS) -c $< -o $@

build/profile/corral: $(LIB_SRC:%.c=build/profile/%.o) build/profile/proxy/main.o
	$(CC) $(REL_FLAGS) -o $@ $^ $(PKG_LIBS) -lm

build/asan/corral: $(ASAN_OBJ) build/asan/proxy/main.o build/asan/FLAGS
	$(CC) $(ASAN_FLAGS) -o $@ $(filter %.o,$^) $(PKG_LIBS) -lm

build/asan/unit/%: tests/unit/%.c $(wildcard tests/unit/*.h) $(ASAN_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(BASE) $(ASAN_FLAGS) $(PKG_CFLAGS) -o $@ $< $(ASAN_OBJ) $(PKG_LIBS) $(UNIT_LIBS) -lm

# The allocation counter the scenarios preload into the release build
# (tests/tools/alloc_count.c; ASan brings its own malloc), and the probe
# that checks what it sees on this machine's glibc.
build/tools/alloc_count.so: tests/tools/alloc_count.c
	@mkdir -p $(dir $@)
	$(CC) $(BASE) -O2 -fPIC -shared -pthread -Wl,-z,now -o $@ $< -ldl

build/tools/alloc_probe: tests/tools/alloc_probe.c tests/unit/unit.h
	@mkdir -p $(dir $@)
	$(CC) $(BASE) -O0 -fno-builtin -pthread -o $@ $< -ldl

# What each coding and level costs on a JSON response (bench/codec_bench.c):
# sizes and single-thread times, for store_encoding's default. Not part of
# make test or make bench.
CODEC_REL_OBJ := $(filter build/release/codec/%,$(REL_OBJ))

build/bench/codec_bench: bench/codec_bench.c $(CODEC_REL_OBJ)
	@mkdir -p $(dir $@)
	$(REL_CC) -o $@ $< $(CODEC_REL_OBJ) $(LDFLAGS) $(PKG_LIBS)

bench-codec: build/bench/codec_bench
	build/bench/codec_bench

# Programs the tests drive (not run by tests/run.py): the change feed's
# probe for tests/changes/test_feed.py (the scenario
# change_feed_module_against_postgres runs it).
build/asan/tools/%: tests/tools/%.c $(ASAN_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(BASE) $(ASAN_FLAGS) $(PKG_CFLAGS) -o $@ $< $(ASAN_OBJ) $(PKG_LIBS) -lm

# Only cache/ may include hiredis, only upstream/ curl, only changes/
# libpq; OpenSSL only the TLS module (proxy/proxy_tls*), the JWT module
# (auth/) and common/digest.c (every digest and HMAC); libevent's OpenSSL
# bufferevents only the TLS module. The unit tests (tests/unit/, not
# listed by */*) and the benchmark's own TLS client (bench/) aside. zlib,
# brotli and zstd only codec/.
check-boundaries:
	@bad=$$(grep -ln '#include <hiredis' $$(ls */*.[ch] | grep -v '^cache/'); \
	        grep -ln '#include <curl' $$(ls */*.[ch] | grep -v '^upstream/'); \
	        grep -ln '#include <libpq-fe.h>' $$(ls */*.[ch] | grep -v '^changes/'); \
	        grep -l '#include <event2/bufferevent_ssl' \
	            $$(ls */*.[ch] | grep -v -e '^proxy/proxy_tls' -e '^bench/'); \
	        grep -l '#include <openssl/' $$(ls */*.[ch] | grep -v -e '^proxy/proxy_tls' \
	            -e '^auth/' -e '^common/digest\.c$$' -e '^bench/'); \
	        grep -lE '#include <(zlib|brotli/|zstd)' $$(ls */*.[ch] | grep -v '^codec/')); \
	if [ -n "$$bad" ]; then echo "module boundary broken in: $$bad"; exit 1; fi

# No file in proxy/, cache/ or conf/ over 900 lines, no function over 60.
check-size:
	@python3 scripts/check-size

# The builds run on every core; the scenarios two at a time (tests/run.py -j).
test: test-deps
	@$(MAKE) --no-print-directory -j$(JOBS) test-build
	python3 tests/run.py --bin build/asan/corral --unit build/asan/unit

test-build: check-boundaries check-size build/asan/corral $(UNIT_BIN) man deb \
            build/release/corral build/tools/alloc_count.so build/tools/alloc_probe \
            build/asan/tools/changes_probe

# Mutation tests of every module (tests/mutants.py): each mutant must make
# one of its tests fail. Not part of make test (about 24 minutes on 2 cores);
# works on scratch copies under build/mutants/, two mutants at once.
test-mutants: test-deps
	python3 tests/mutants.py

# Sampled mutation tests of one module (tests/mutate.py): N mutations drawn
# at random from its operators, boundaries and constants, each built and
# run against the tests aimed at the module; survivors are listed. SEED
# draws the same N again.
#   make test-mutants-sampled MODULE=proxy/proxy_hdr.c [N=20] [SEED=...]
test-mutants-sampled: test-deps
	@test -n "$(MODULE)" || { echo "usage: make test-mutants-sampled" \
	    "MODULE=proxy/proxy_hdr.c [N=20] [SEED=...]"; exit 2; }
	python3 tests/mutate.py $(MODULE) -n $(or $(N),20) $(if $(SEED),--seed $(SEED))

run: all
	scripts/run-demo

bench: all test-deps
	bench/run

clean:
	rm -rf build

# ---- manual pages, make install, make deb ---------------------------------------
#   The manual pages are man/*.in with the version filled in; corral.conf(5)
#   gets its list of keys from the table corral -h prints (man/gen_keys.c),
#   corral-metrics(7) the /stats counters and the histograms' buckets from
#   theirs (man/gen_metrics.c), and corral(8) and corral-metrics(7) the
#   tables of Cache-Status values (docs/http.md), failure modes and metrics
#   (docs/operations.md) through man/table.awk, so that no page says other
#   than the docs.
#
#   make install [PREFIX=/usr/local] [DESTDIR=]
#     PREFIX/sbin/corral, PREFIX/share/man/man{5,8}, the systemd unit in
#     UNITDIR (PREFIX/lib/systemd/system), /etc/logrotate.d/corral, and
#     /etc/corral/corral.conf unless one is there already.
#   make deb
#     build/corral_VERSION-REVISION_ARCH.deb with dpkg-deb: PREFIX=/usr, the
#     unit in /lib/systemd/system, the config and logrotate snippet as
#     conffiles, the copyright and changelog (dist/debian/) in its doc
#     directory. DEB_MAINTAINER names its Maintainer.

PREFIX  ?= /usr/local
DESTDIR ?=
SBINDIR  = $(PREFIX)/sbin
MANDIR   = $(PREFIX)/share/man
DOCDIR   = $(PREFIX)/share/doc/corral
UNITDIR ?= $(PREFIX)/lib/systemd/system
CONFDIR  = /etc/corral
MAN_PAGES := build/man/corral.8 build/man/corral.conf.5 build/man/corral-metrics.7
TABLE     = awk -v header='$(1)' -f man/table.awk $(2)

build/man/gen_keys: man/gen_keys.c $(CONF_SRC) common/fields.c common/host.c common/util.c common/log.c \
                    $(wildcard */*.h)
	@mkdir -p $(dir $@)
	$(CC) $(BASE) $(PKG_CFLAGS) -o $@ $(filter %.c,$^) $(PKG_LIBS) -lm

build/man/gen_metrics: man/gen_metrics.c common/hist.c $(wildcard */*.h)
	@mkdir -p $(dir $@)
	$(CC) $(BASE) $(PKG_CFLAGS) -o $@ $(filter %.c,$^) -lm

build/man/corral.8: man/corral.8.in man/table.awk docs/http.md docs/operations.md Makefile
	@mkdir -p $(dir $@)
	$(call TABLE,| value | meaning |,docs/http.md) > $@.status
	$(call TABLE,| fault | what Corral does |,docs/operations.md) > $@.faults
	sed -e 's/@VERSION@/$(VERSION)/g' -e '/^@CACHE_STATUS@$$/{r $@.status' -e 'd;}' \
	    -e '/^@FAILURES@$$/{r $@.faults' -e 'd;}' $< > $@
	@rm -f $@.status $@.faults

build/man/corral-metrics.7: man/corral-metrics.7.in build/man/gen_metrics man/table.awk \
                            docs/operations.md Makefile
	@mkdir -p $(dir $@)
	build/man/gen_metrics counters > $@.counters
	build/man/gen_metrics buckets > $@.buckets
	$(call TABLE,| metric | type | labels | meaning |,docs/operations.md) > $@.metrics
	sed -e 's/@VERSION@/$(VERSION)/g' -e '/^@COUNTERS@$$/{r $@.counters' -e 'd;}' \
	    -e '/^@BUCKETS@$$/{r $@.buckets' -e 'd;}' -e '/^@METRICS@$$/{r $@.metrics' \
	    -e 'd;}' $< > $@
	@rm -f $@.counters $@.buckets $@.metrics

build/man/corral.conf.5: man/corral.conf.5.in build/man/gen_keys Makefile
	@mkdir -p $(dir $@)
	build/man/gen_keys > $@.keys
	sed -e 's/@VERSION@/$(VERSION)/g' -e '/^@KEYS@$$/{r $@.keys' -e 'd;}' $< > $@
	@rm -f $@.keys

man: $(MAN_PAGES)

# The installed configuration: the example, with the PID file the
# logrotate snippet and the package's scripts look for (without systemd).
build/dist/corral.conf: conf/corral.conf Makefile
	@mkdir -p $(dir $@)
	sed 's|^pid_file = *;|pid_file = /run/corral/corral.pid ;|' $< > $@
	grep -q '^pid_file = /run/corral/corral.pid ;' $@

build/dist/corral.service: dist/corral.service.in Makefile
	@mkdir -p $(dir $@)
	sed -e 's|@SBINDIR@|$(SBINDIR)|g' -e 's|@CONFDIR@|$(CONFDIR)|g' $< > $@

# build/dist/corral.service depends on PREFIX: made again on every install.
install: build/release/corral man build/dist/corral.conf
	@rm -f build/dist/corral.service
	@$(MAKE) --no-print-directory build/dist/corral.service PREFIX=$(PREFIX)
	install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(MANDIR)/man8 \
	    $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man7 \
	    $(DESTDIR)$(UNITDIR) $(DESTDIR)$(CONFDIR) \
	    $(DESTDIR)/etc/logrotate.d $(DESTDIR)$(DOCDIR)
	install -m 755 build/release/corral $(DESTDIR)$(SBINDIR)/corral
	install -m 644 build/man/corral.8 $(DESTDIR)$(MANDIR)/man8/corral.8
	install -m 644 build/man/corral.conf.5 $(DESTDIR)$(MANDIR)/man5/corral.conf.5
	install -m 644 build/man/corral-metrics.7 $(DESTDIR)$(MANDIR)/man7/corral-metrics.7
	install -m 644 build/dist/corral.service $(DESTDIR)$(UNITDIR)/corral.service
	install -m 644 dist/corral.logrotate $(DESTDIR)/etc/logrotate.d/corral
	install -m 644 conf/corral.conf $(DESTDIR)$(DOCDIR)/corral.conf.example
	install -m 644 docs/grafana-dashboard.json $(DESTDIR)$(DOCDIR)/grafana-dashboard.json
	@if [ -e $(DESTDIR)$(CONFDIR)/corral.conf ]; then \
	  echo "install: keeping the existing $(DESTDIR)$(CONFDIR)/corral.conf"; \
	else \
	  install -m 644 build/dist/corral.conf $(DESTDIR)$(CONFDIR)/corral.conf; \
	fi

deb: deps build/release/corral man
	scripts/make-deb $(VERSION)-$(DEB_REVISION) "$(DEB_MAINTAINER)"

# ---- fuzzing and valgrind: not part of make test ------------------------------
#   make fuzz            builds the libFuzzer targets in fuzz/ with clang and runs
#                        each for FUZZ_SECONDS (default 30), starting from the seed
#                        corpus in fuzz/corpus/TARGET; fails on a crash, whose input
#                        is saved as build/fuzz/crash-TARGET-*
#   make fuzz-seeds      rewrites fuzz/corpus/entry with fuzz/seed_entry.c
#   make test-valgrind   the scenarios against build/release/corral run under valgrind
#                        (every harness time limit stretched by VALGRIND_SLOWNESS);
#                        fails on any valgrind error or definite/indirect leak

FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 30
FUZZ_FLAGS   := -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
                -fno-omit-frame-pointer
FUZZ_TARGETS := entry conf key hdr frame json base64 jwt pgoutput
FUZZ_LINK     = @mkdir -p $(dir $@); \
                $(FUZZ_CC) $(BASE) $(FUZZ_FLAGS) $(PKG_CFLAGS) -o $@ $(filter %.c,$^) \
                $(PKG_LIBS) -lm

VALGRIND          := valgrind --error-exitcode=99 --leak-check=full \
                     --errors-for-leak-kinds=definite,indirect \
                     --show-leak-kinds=definite,indirect --num-callers=30 \
                     --suppressions=tests/valgrind.supp
VALGRIND_SLOWNESS ?= 8

.PHONY: fuzz fuzz-seeds test-valgrind

build/fuzz/fuzz_entry: fuzz/fuzz_entry.c cache/cache_entry.c $(wildcard */*.h)
	$(FUZZ_LINK)

build/fuzz/fuzz_conf: fuzz/fuzz_conf.c $(CONF_SRC) common/fields.c common/host.c common/util.c common/log.c \
                      $(wildcard */*.h)
	$(FUZZ_LINK)

build/fuzz/fuzz_key: fuzz/fuzz_key.c cache/cache_key.c $(wildcard */*.h)
	$(FUZZ_LINK)

build/fuzz/fuzz_hdr: fuzz/fuzz_hdr.c proxy/proxy_hdr.c proxy/proxy_sf.c $(CONF_SRC) common/fields.c common/arena.c common/hlist.c common/host.c common/util.c \
                     common/log.c $(wildcard */*.h)
	$(FUZZ_LINK)

build/fuzz/fuzz_frame: fuzz/fuzz_frame.c proxy/proxy_frame.c proxy/proxy_chunk.c common/host.c $(wildcard */*.h)
	$(FUZZ_LINK)

build/fuzz/fuzz_json: fuzz/fuzz_json.c common/json.c $(wildcard */*.h)
	$(FUZZ_LINK)

build/fuzz/fuzz_base64: fuzz/fuzz_base64.c common/base64.c $(wildcard */*.h)
	$(FUZZ_LINK)

build/fuzz/fuzz_jwt: fuzz/fuzz_jwt.c auth/jwt.c auth/jwt_keys.c auth/jwt_claims.c common/json.c \
                     common/base64.c common/digest.c $(wildcard */*.h)
	$(FUZZ_LINK)

build/fuzz/fuzz_pgoutput: fuzz/fuzz_pgoutput.c changes/pgoutput.c changes/txn.c changes/rules.c \
                          common/dict.c common/util.c $(wildcard */*.h)
	$(FUZZ_LINK)

build/fuzz/seed_entry: fuzz/seed_entry.c cache/cache_entry.c $(wildcard */*.h)
	@mkdir -p $(dir $@)
	$(CC) $(BASE) $(PKG_CFLAGS) -o $@ $(filter %.c,$^) $(PKG_LIBS)

fuzz-seeds: build/fuzz/seed_entry
	build/fuzz/seed_entry fuzz/corpus/entry

fuzz: test-deps $(FUZZ_TARGETS:%=build/fuzz/fuzz_%)
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p build/fuzz/corpus-$$t; \
	  dict=; [ -f fuzz/$$t.dict ] && dict=-dict=fuzz/$$t.dict; \
	  echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
	  if ! build/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 \
	      -print_final_stats=1 -artifact_prefix=build/fuzz/crash-$$t- $$dict \
	      build/fuzz/corpus-$$t fuzz/corpus/$$t > build/fuzz/$$t.log 2>&1; then \
	    tail -n 40 build/fuzz/$$t.log; \
	    echo "fuzz: $$t failed; input in build/fuzz/crash-$$t-*, log in build/fuzz/$$t.log"; \
	    exit 1; \
	  fi; \
	  grep -h "stat::number_of_executed_units" build/fuzz/$$t.log; \
	done

test-valgrind: test-deps build/release/corral
	CORRAL_WRAPPER="$(VALGRIND)" CORRAL_TEST_SLOWNESS=$(VALGRIND_SLOWNESS) \
	python3 tests/run.py --bin build/release/corral
