# klf — the two commands: `make demo` and `make test`. Both install missing Debian packages first.
#   make            build klf (release, -O2) into build/
#   make demo       run the bundled three-replica incident: dump, diff and explain (KEEP=1 keeps its output)
#   make test       unit + end-to-end tests (CTest), a short libFuzzer smoke run of every decoder, and the
#                   compactor's tests under ThreadSanitizer (it runs a second thread)
#   make test SAN=1 the same tests built with AddressSanitizer + UndefinedBehaviorSanitizer
#   make fuzz FUZZ_SECONDS=600 [FUZZ_RUNS=10000000]   longer fuzzing runs (see docs/ROBUSTNESS.md)
#   make bench      build and run the benchmarks (see docs/PERFORMANCE.md)
#   make tidy [BASE=REV]  clang-tidy's function-complexity check on the .cc files changed since REV
#                   (BASE=--all: every .cc, as the tidy_check test in `make test` does)
#   make package    a .deb (CPack: the binary, a man page from --help, the README) and a statically
#                   linked klf for bare broker hosts, in build-package/ (tested by tests/package)

JOBS ?= $(shell nproc)
SAN ?= 0
# Warnings are errors in the Makefile's builds (hence CI); WERROR=0 relaxes it for a local experiment.
WERROR ?= 1
ifeq ($(WERROR),1)
CMAKE_ARGS += -DKLF_WERROR=ON
endif
ifeq ($(SAN),1)
BUILD_DIR ?= build-san
CMAKE_ARGS += -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKLF_SANITIZE=ON -DKLF_BENCH=OFF
else
BUILD_DIR ?= build
CMAKE_ARGS += -DCMAKE_BUILD_TYPE=Release
endif
FUZZ_DIR ?= build-fuzz
TSAN_DIR ?= build-tsan
KLF := $(BUILD_DIR)/klf

.PHONY: all deps test-deps configure build demo test unit-test fuzz-smoke tsan-test fuzz bench clean package package-test tidy

all: build

# What building and running needs; the test tools (clang, Python's Kafka client, Chromium, hyperfine)
# come with the targets that use them.
deps:
	@bash scripts/install-deps.sh build

test-deps:
	@bash scripts/install-deps.sh test

$(BUILD_DIR)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD_DIR) $(CMAKE_ARGS)

configure: deps $(BUILD_DIR)/CMakeCache.txt

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

demo: configure
	cmake --build $(BUILD_DIR) --target klf -j $(JOBS)
	@KEEP=$(KEEP) bash scripts/demo.sh $(KLF)

unit-test: test-deps build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

$(FUZZ_DIR)/CMakeCache.txt: | test-deps
	CC=clang-14 CXX=clang++-14 cmake -S . -B $(FUZZ_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKLF_FUZZ=ON -DKLF_BENCH=OFF

fuzz-smoke: test-deps $(FUZZ_DIR)/CMakeCache.txt
	cmake --build $(FUZZ_DIR) --target fuzzers -j $(JOBS)
	cd $(FUZZ_DIR) && ctest --output-on-failure -j $(JOBS) -R fuzz_smoke_

$(TSAN_DIR)/CMakeCache.txt: | deps
	cmake -S . -B $(TSAN_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKLF_BENCH=OFF \
	  -DCMAKE_CXX_FLAGS=-fsanitize=thread -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread

# The libraries with threads: the compactor (offset map halves; the look-ahead thread's lookups,
# decoding and the compression the cleaning pass lends it), the log-dir scan and verify (--threads,
# the per-partition hook), diff's replica loads, and ParallelFor's users (diff, lso, digest, triage,
# txn). Their unit tests, then the end-to-end tests with a ThreadSanitizer klf (a report fails the
# run: exit 86 and its text, tests/e2e/klf_e2e.py), but hostile_memory_test: it checks allocation
# bounds on one thread, takes 15 minutes under TSan, and runs in the plain build (and ASan's, SAN=1).
TSAN_TESTS = compactor_tests segment_reader_tests verify_tests diff_tests txn_tests digest_tests cli_tests
tsan-test: test-deps $(TSAN_DIR)/CMakeCache.txt
	cmake --build $(TSAN_DIR) --target $(TSAN_TESTS) klf -j $(JOBS)
	for t in $(TSAN_TESTS); do TSAN_OPTIONS=halt_on_error=1 $(TSAN_DIR)/tests/$$t > $(TSAN_DIR)/$$t.log 2>&1 \
	  || { tail -50 $(TSAN_DIR)/$$t.log; exit 1; }; echo "$$t: $$(grep -E '^\[==========\]' $(TSAN_DIR)/$$t.log | tail -1)"; done
	cd $(TSAN_DIR) && TSAN_OPTIONS=halt_on_error=1:exitcode=86 ctest --output-on-failure -j $(JOBS) -R '^e2e_' \
	  -E '^e2e_hostile_memory_test$$'

test: unit-test
ifeq ($(SAN),0)
	$(MAKE) fuzz-smoke
	$(MAKE) tsan-test
	$(MAKE) package-test
endif

FUZZ_SECONDS ?= 600
FUZZ_RUNS ?= -1
fuzz: test-deps $(FUZZ_DIR)/CMakeCache.txt
	cmake --build $(FUZZ_DIR) --target fuzzers -j $(JOBS)
	bash scripts/fuzz.sh $(FUZZ_DIR) $(FUZZ_SECONDS) $(FUZZ_RUNS)

bench: test-deps build
	bash scripts/bench.sh $(BUILD_DIR)

BASE ?= HEAD~1
tidy: configure
	bash scripts/tidy.sh $(BASE) $(BUILD_DIR)

PKG_DIR ?= build-package
# The static build links every library's archive (KLF_STATIC in CMakeLists.txt); the man page is
# help2man's rendering of `klf --help`; cpack then packs the binary, the man page and the README.
package:
	@bash scripts/install-deps.sh package
	cmake -S . -B $(PKG_DIR) -DCMAKE_BUILD_TYPE=Release -DKLF_STATIC=ON -DKLF_WERROR=ON \
	  -DKLF_MAN_PAGE=$(CURDIR)/$(PKG_DIR)/klf.1.gz
	cmake --build $(PKG_DIR) --target klf -j $(JOBS)
	help2man --no-info --name="offline forensics and repair for Apache Kafka data" \
	  --version-string="$$($(PKG_DIR)/klf --version | cut -d' ' -f2)" $(PKG_DIR)/klf | gzip -9n > $(PKG_DIR)/klf.1.gz
	cd $(PKG_DIR) && cpack -G DEB
	cp $(PKG_DIR)/klf $(PKG_DIR)/klf-static
	@ls -l $(PKG_DIR)/*.deb $(PKG_DIR)/klf-static

package-test: package
	python3 tests/package/package_test.py $(PKG_DIR)

clean:
	rm -rf build build-san build-fuzz build-tsan build-package
