# Muster: a batch gang scheduler for Kubernetes.
#
#   make                  build ./build/muster
#   make test             unit tests, then cluster tests against a real control plane
#   make unit             unit tests only (no cluster)
#   make demo             a local cluster, Muster, two teams' gangs: admitted, waiting, done
#   make cluster-up [PROFILE=small]   start the local control plane
#   make cluster-down     stop it and remove its state
#   make bench-apiserver-limit        bind throughput the API server absorbs
#   make chaos [CHAOS_MINUTES=10] [PROFILE=small] [CHAOS_SEED=1]   faults through a proxy, invariants checked (docs/chaos.md)
#   make bench-peers      Muster beside Volcano, Coscheduling, kube-scheduler's gangs
#   make format / make format-check
#   make arch-check       every #include follows the house's arrows (scripts/arch-check)
#   make SANITIZE=address,undefined test   the same under sanitizers
#   make test-threads     the daemon's cluster suites under ThreadSanitizer
#   make fuzz [FUZZ_SECONDS=600]   every libFuzzer target in fuzz/, 30 s each
#
# Every target that needs something from outside installs it first, and
# only what is missing: `make` the Debian packages (scripts/deps), the
# cluster targets also the Python test environment and the control plane
# binaries. `make deps` does all of it up front.

CC ?= cc
PKGS := libcurl libcjson yaml-0.1 libuv openssl
PROFILE ?= small

# Separate build trees so sanitized and plain objects never mix.
comma := ,
BUILD := build$(if $(SANITIZE),-$(subst $(comma),-,$(SANITIZE)))

# FUZZ=1 (set by `make fuzz` for its own sub-make): the same sources built
# by clang with libFuzzer's coverage hooks, ASan and UBSan, in build-fuzz/.
# Only the fuzz/ programs link libFuzzer itself (-fsanitize=fuzzer).
FUZZ_SAN := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all \
	-fno-omit-frame-pointer
ifeq ($(FUZZ),1)
ifneq ($(SANITIZE),)
$(error FUZZ=1 brings its own sanitizers; leave SANITIZE unset)
endif
CC := clang
BUILD := build-fuzz
endif

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wpointer-arith -Wformat=2 -Wvla
CFLAGS ?= -O2 -g
CFLAGS += -std=c11 -D_GNU_SOURCE $(WARN) -I. -MMD -MP
ifneq ($(SANITIZE),)
CFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS += -fsanitize=$(SANITIZE)
endif
# Link-time optimization where nothing else instruments the code: the
# scheduler and the benchmarks are linked with it, the planner's calls
# across its files inlined (6% fewer instructions in a steady cycle:
# callgrind, two cycles at 20,000 nodes). The objects carry plain code
# too (fat), so the tests link as before, without the link-time pass.
ifeq ($(SANITIZE)$(FUZZ),)
LTO ?= -flto=auto -ffat-lto-objects
endif
ifeq ($(FUZZ),1)
# kubeapi__reslist() builds a blob as a header with a flexible array
# followed by its entries, a GNU C layout gcc accepts silently.
CFLAGS += $(FUZZ_SAN) -Wno-gnu-variable-sized-type-not-at-end
endif

# pkg-config is evaluated lazily: `make deps` may be what installs it.
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS))
PKG_LIBS = $(shell pkg-config --libs $(PKGS)) -lm
TEST_CFLAGS = $(shell pkg-config --cflags cmocka)
TEST_LIBS = $(shell pkg-config --libs cmocka)

# llhttp, the debug server's request parser, is not packaged by Debian:
# scripts/deps fetches it into the user cache. A fixed path, so reading
# this file needs no network; exported so scripts/deps uses the same one.
# Not our code: built with its own, relaxed flags into libllhttp.a.
LLHTTP_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/muster/llhttp-9.3.0
export LLHTTP_DIR
LLHTTP_OBJ := $(addprefix $(BUILD)/llhttp/,api.o http.o llhttp.o)
LLHTTP_LIB := $(BUILD)/libllhttp.a
LLHTTP_CFLAGS := -O2 -g -fPIC $(if $(SANITIZE),-fsanitize=$(SANITIZE) -fno-omit-frame-pointer) \
	$(if $(filter 1,$(FUZZ)),$(FUZZ_SAN))
CFLAGS += -I$(LLHTTP_DIR)/include

# One folder per module (sub-folders are modules of their own); each
# module's .c files go into libmuster.a.
MODULES := base kubeapi queue policy config sim scheduler scheduler/httpd scheduler/cli scheduler/debug
LIB_SRC := $(filter-out scheduler/main.c,$(foreach m,$(MODULES),$(wildcard $(m)/*.c)))
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
LIB := $(BUILD)/libmuster.a
MUSTER := $(BUILD)/muster

# Unit tests mirror the source tree: test/unit/<folder>/test_<name>.c,
# sub-folders too (test/unit/scheduler/httpd/test_httpd.c).
UNIT_SRC := $(wildcard test/unit/*/test_*.c test/unit/*/*/test_*.c)
UNIT_BIN := $(UNIT_SRC:test/unit/%.c=$(BUILD)/test/%)

# Integration tests: cmocka programs that talk to the local control plane
# (test/integration/<module>/test_<name>.c), run by test/cluster/run-tests
# with MUSTER_CLUSTER_DIR naming the cluster.
INTEG_SRC := $(wildcard test/integration/*/test_*.c)
INTEG_BIN := $(INTEG_SRC:test/integration/%.c=$(BUILD)/itest/%)

BENCH_BIN := $(BUILD)/bench/apiserver_limit $(BUILD)/bench/cache_sync \
	$(BUILD)/bench/plan_cycle $(BUILD)/bench/alibaba_pack

# Fuzz targets (fuzz/README.md): one libFuzzer program per fuzz/*.c, built
# with FUZZ=1 only. `make fuzz` runs each for FUZZ_SECONDS on a corpus in
# build-fuzz/corpus/ seeded from the test fixtures; FUZZ_ARGS adds libFuzzer
# options (e.g. -max_len=65536). The watch target links an in-memory HTTP
# engine in place of kubeapi/http*.c (the informers' calls are rerouted).
FUZZ_TARGETS := $(patsubst fuzz/%.c,%,$(wildcard fuzz/*.c))
FUZZ_BIN := $(FUZZ_TARGETS:%=build-fuzz/fuzz/%)
FUZZ_SECONDS ?= 30
FUZZ_ARGS ?=
FUZZ_LDFLAGS_watch := -Wl,--wrap=kubeapi_http_submit -Wl,--wrap=kubeapi_http_cancel

.PHONY: all deps c-deps unit integration-bins test test-threads demo cluster-up cluster-down chaos format format-check arch-check \
	bench-apiserver-limit bench-cache-sync bench-plan bench-alibaba bench-e2e bench-native bench-peers clean fuzz fuzz-bins

all: c-deps $(MUSTER) $(BENCH_BIN)

c-deps:
	@scripts/deps

deps: c-deps
	@scripts/deps --venv >/dev/null
	@test/cluster/build >/dev/null
	@test/cluster/build-operators >/dev/null

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LTO) $(PKG_CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@
	$(if $(LIB_OBJ),ar rcs $@ $^,ar rcs $@)

$(LLHTTP_OBJ): $(BUILD)/llhttp/%.o: $(LLHTTP_DIR)/src/%.c
	@mkdir -p $(dir $@)
	$(CC) $(LLHTTP_CFLAGS) -I$(LLHTTP_DIR)/include -c $< -o $@

# Fetched by c-deps; this rule covers a target built without it.
$(LLHTTP_DIR)/src/%.c:
	@scripts/deps

$(LLHTTP_LIB): $(LLHTTP_OBJ)
	rm -f $@
	ar rcs $@ $^

$(MUSTER): $(BUILD)/scheduler/main.o $(LIB) $(LLHTTP_LIB)
	$(CC) $(CFLAGS) $(LTO) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

$(BUILD)/test/%: test/unit/%.c $(LIB) $(LLHTTP_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) $(TEST_CFLAGS) $(LDFLAGS) -o $@ $< $(LIB) $(LLHTTP_LIB) $(TEST_LIBS) \
		$(PKG_LIBS)

$(BUILD)/itest/%: test/integration/%.c $(LIB) $(LLHTTP_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) $(TEST_CFLAGS) $(LDFLAGS) -o $@ $< $(LIB) $(LLHTTP_LIB) $(TEST_LIBS) \
		$(PKG_LIBS)

$(BUILD)/bench/%: bench/%.c $(LIB) $(LLHTTP_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LTO) $(PKG_CFLAGS) $(LDFLAGS) -o $@ $< $(LIB) $(LLHTTP_LIB) $(PKG_LIBS)

# clang and libFuzzer come with `scripts/deps --fuzz` only, so a plain
# `make` never needs them; the sub-make builds everything in build-fuzz/.
fuzz:
	@scripts/deps --fuzz
	@$(MAKE) --no-print-directory FUZZ=1 fuzz-bins
	@FUZZ_ARGS='$(FUZZ_ARGS)' fuzz/run build-fuzz $(FUZZ_SECONDS) $(FUZZ_TARGETS)

ifeq ($(FUZZ),1)
fuzz-bins: $(FUZZ_BIN)

build-fuzz/fuzz/%: fuzz/%.c $(LIB) $(LLHTTP_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -fsanitize=fuzzer $(FUZZ_LDFLAGS_$*) -o $@ $< $(LIB) \
		$(LLHTTP_LIB) $(PKG_LIBS)

-include $(FUZZ_BIN:=.d)
else
fuzz-bins:
	@$(MAKE) --no-print-directory FUZZ=1 fuzz-bins
endif

unit: c-deps $(UNIT_BIN)
	@test/unit/run $(UNIT_BIN)

integration-bins: c-deps $(INTEG_BIN)

test: all unit integration-bins
	BUILD=$(BUILD) test/cluster/run-tests

# The daemon under ThreadSanitizer, stopped at its first report: the
# planner runs on a thread of libuv's pool while the loop reads watches,
# renews the lease and carries out binds (scheduler/run.c); these suites
# drive all of that (about 5 minutes).
THREAD_SUITES := test_leader or test_scheduler or test_preemption or test_vgpu or test_debug
test-threads:
	$(MAKE) SANITIZE=thread all
	TSAN_OPTIONS=halt_on_error=1 BUILD=build-thread test/cluster/run-tests -k "$(THREAD_SUITES)"

demo: all
	BUILD=$(BUILD) scripts/demo

cluster-up: c-deps
	test/cluster/ctl up $(PROFILE)

chaos: all
	BUILD=$(BUILD) CHAOS_MINUTES=$(CHAOS_MINUTES) CHAOS_SEED=$(CHAOS_SEED) PROFILE=$(PROFILE) test/cluster/chaos-run

cluster-down:
	test/cluster/ctl down

bench-apiserver-limit: all
	bench/apiserver-limit

bench-cache-sync: all
	bench/cache-sync

bench-e2e: all
	bench/e2e-bind

# kube-scheduler 1.37's own gang scheduling beside Muster on native
# PodGroups, one cluster, one run (bench/README.md).
bench-native: all
	bench/native-gangs

# Muster beside Volcano, Coscheduling and kube-scheduler's own gangs, five
# shapes of work, interleaved, on one cluster (bench/README.md, bench-peers).
bench-peers: all
	bench/peers

# The sweep's figure is the least of five cycles: the first two of each
# size take new memory (page faults), so three of five are clean, where
# with three reps one was, and the 5,000-node baseline moved a fifth from
# sweep to sweep (bench/README.md).
bench-plan: all
	$(BUILD)/bench/plan_cycle --sweep --reps 5
	$(BUILD)/bench/plan_cycle 5000 --vgpu 30 --baseline
	$(BUILD)/bench/plan_cycle 50000 --reps 1 --late
	$(BUILD)/bench/plan_cycle 5000 --preempt --reps 3 --forecast 15 --baseline

# One planner cycle with priority preemption, reclaim and reservations
# (bench/README.md), then the same across cluster sizes.
.PHONY: bench-plan-preempt
bench-plan-preempt: all
	$(BUILD)/bench/plan_cycle 5000 --preempt
	$(BUILD)/bench/plan_cycle --sweep --preempt

# Placement on the Alibaba GPU trace beside the FGD paper's published results
# (bench/alibaba_pack.c). The arrivals are the paper simulator's own, seed for
# seed: bench/alibaba-order (Go, standard library only) writes them, after its
# test has checked them against the published curves. Then the planner's whole
# cycle replays the default trace's seed 42 (`muster simulate --alibaba`), for
# the figure the bench gives that seed.
ALIBABA_DIR ?= $(or $(MUSTER_ALIBABA_DIR),../shared/data/alibaba-gpu-v2023)
ALIBABA_TRACES := openb_pod_list_default openb_pod_list_gpuspec33 \
	openb_pod_list_multigpu50 openb_pod_list_gpushare100
ALIBABA_SEEDS := 42 43 44 45 46 47 48 49 50 51
ALIBABA_ORDERS = $(BUILD)/bench/alibaba-order
bench-alibaba: all
	cd bench/alibaba-order && MUSTER_ALIBABA_DIR=$(abspath $(ALIBABA_DIR)) go test . && \
		go build -o $(abspath $(BUILD))/bench/alibaba_order .
	mkdir -p $(ALIBABA_ORDERS)
	for t in $(ALIBABA_TRACES); do \
		[ -f $(ALIBABA_DIR)/$$t.csv ] || continue; \
		for s in $(ALIBABA_SEEDS); do \
			$(BUILD)/bench/alibaba_order -data $(ALIBABA_DIR) \
				-o $(ALIBABA_ORDERS)/$$t-$$s.txt $$t $$s || exit 1; \
		done; \
	done
	$(BUILD)/bench/alibaba_pack $(ALIBABA_DIR) --order-dir $(ALIBABA_ORDERS)
	@echo "== the planner itself, one cycle an arrival (muster simulate --alibaba), default, seed 42"
	$(MUSTER) simulate --alibaba $(ALIBABA_DIR)/openb_pod_list_default.csv \
		--order $(ALIBABA_ORDERS)/openb_pod_list_default-42.txt

FORMAT_SRC = $(shell git ls-files --cached --others --exclude-standard '*.c' '*.h')
format: c-deps
	clang-format -i $(FORMAT_SRC)

arch-check:
	@scripts/arch-check

format-check: c-deps
	clang-format --dry-run --Werror $(FORMAT_SRC)

clean:
	rm -rf build build-*

-include $(LIB_OBJ:.o=.d) $(BUILD)/scheduler/main.d $(addsuffix .d,$(UNIT_BIN) $(INTEG_BIN) $(BENCH_BIN))
