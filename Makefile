# Corral: caching HTTP reverse proxy that stops cache stampedes.
#
#   make            build build/release/corral (installs missing packages first)
#   make run        build, then start redis-server, the demo origin and corral
#   make test       unit + scenario tests under AddressSanitizer and UBSan
#   make test-mutants  mutation tests: every change of the lock protocol is caught
#   make bench      benchmark against nginx and Varnish (see bench/)
#   make clean

VERSION := 0.1.0
PKGS    := libevent hiredis libcurl inih

CC      ?= cc
WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -Wpointer-arith -Wformat=2 -Wno-unused-parameter
BASE    := -std=c11 -D_GNU_SOURCE -DCORRAL_VERSION='"$(VERSION)"' -I. $(WARN) -g

PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null)

SRC      := $(wildcard common/*.c cache/*.c upstream/*.c conf/*.c proxy/*.c)
GEN_SRC  := build/gen/dashboard.c
LIB_SRC  := $(filter-out proxy/main.c,$(SRC)) $(GEN_SRC)
UNIT_SRC := $(wildcard tests/unit/test_*.c)

REL_FLAGS  := -O2
ASAN_FLAGS := -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

REL_OBJ  := $(LIB_SRC:%.c=build/release/%.o)
ASAN_OBJ := $(LIB_SRC:%.c=build/asan/%.o)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=build/asan/unit/%)

.PHONY: all deps run test test-mutants unit scenarios bench clean check-boundaries

all: deps build/release/corral

deps:
	@scripts/install-deps

# The admin dashboard, embedded as a C array (with od and sed: xxd may be missing).
build/gen/dashboard.c: proxy/dashboard.html
	@mkdir -p $(dir $@)
	@{ printf '#include "proxy/dashboard.h"\n\nconst unsigned char dashboard_html[] = {\n'; \
	  od -An -v -tx1 $< | sed -e 's/ \([0-9a-f][0-9a-f]\)/0x\1,/g' -e 's/^/\t/'; \
	  printf '};\nconst size_t dashboard_html_len = sizeof(dashboard_html);\n'; } > $@.tmp
	@mv $@.tmp $@

build/release/%.o: %.c $(wildcard */*.h)
	@mkdir -p $(dir $@)
	$(CC) $(BASE) $(REL_FLAGS) $(PKG_CFLAGS) -c $< -o $@

build/asan/%.o: %.c $(wildcard */*.h)
	@mkdir -p $(dir $@)
	$(CC) $(BASE) $(ASAN_FLAGS) $(PKG_CFLAGS) -c $< -o $@

build/release/corral: $(REL_OBJ) build/release/proxy/main.o
	$(CC) $(REL_FLAGS) -o $@ $^ $(PKG_LIBS) -lm

build/asan/corral: $(ASAN_OBJ) build/asan/proxy/main.o
	$(CC) $(ASAN_FLAGS) -o $@ $^ $(PKG_LIBS) -lm

build/asan/unit/%: tests/unit/%.c tests/unit/unit.h $(ASAN_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(BASE) $(ASAN_FLAGS) $(PKG_CFLAGS) -o $@ $< $(ASAN_OBJ) $(PKG_LIBS) -lm

# Only cache/ may include hiredis and only upstream/ may include curl.
check-boundaries:
	@bad=$$(grep -ln '#include <hiredis' $$(ls */*.[ch] | grep -v '^cache/'); \
	        grep -ln '#include <curl' $$(ls */*.[ch] | grep -v '^upstream/')); \
	if [ -n "$$bad" ]; then echo "module boundary broken in: $$bad"; exit 1; fi

test: deps check-boundaries build/asan/corral $(UNIT_BIN)
	python3 tests/run.py --bin build/asan/corral --unit build/asan/unit

# Mutation tests of the lock protocol and the request flow (tests/mutants.py):
# each mutant must make one of its tests fail. Not part of make test (a few
# minutes); works on a scratch copy under build/mutants/.
test-mutants: deps
	python3 tests/mutants.py

run: all
	scripts/run-demo

bench: all
	bench/run

clean:
	rm -rf build

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
FUZZ_TARGETS := entry conf key hdr
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

build/fuzz/fuzz_conf: fuzz/fuzz_conf.c conf/conf.c common/util.c common/log.c \
                      $(wildcard */*.h)
	$(FUZZ_LINK)

build/fuzz/fuzz_key: fuzz/fuzz_key.c cache/cache_key.c $(wildcard */*.h)
	$(FUZZ_LINK)

build/fuzz/fuzz_hdr: fuzz/fuzz_hdr.c proxy/proxy_hdr.c conf/conf.c common/util.c \
                     common/log.c $(wildcard */*.h)
	$(FUZZ_LINK)

build/fuzz/seed_entry: fuzz/seed_entry.c cache/cache_entry.c $(wildcard */*.h)
	@mkdir -p $(dir $@)
	$(CC) $(BASE) $(PKG_CFLAGS) -o $@ $(filter %.c,$^) $(PKG_LIBS)

fuzz-seeds: build/fuzz/seed_entry
	build/fuzz/seed_entry fuzz/corpus/entry

fuzz: deps $(FUZZ_TARGETS:%=build/fuzz/fuzz_%)
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

test-valgrind: deps build/release/corral
	CORRAL_WRAPPER="$(VALGRIND)" CORRAL_TEST_SLOWNESS=$(VALGRIND_SLOWNESS) \
	python3 tests/run.py --bin build/release/corral
