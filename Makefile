# The two set-up commands of the README:
#   make demo       builds the library and the CLI only, then runs the main job on a built-in
#                   example (GPU when usable), and says how long the build took
#   make test       builds everything (without a GPU, all but the GPU benchmarks: docs/testing.md)
#                   and runs every test, then the C tests again under
#                   AddressSanitizer and UndefinedBehaviorSanitizer in a build without zlib (its
#                   own CRC-32 then writes the .npz files, which the top-k CLI tests read back),
#                   those whose threads share state under ThreadSanitizer, and the fuzz targets
#                   over their seed corpora (when a clang links libFuzzer: the ASan/UBSan build
#                   is then made with it and builds them too); it ends with one table of every
#                   stage (tests/summary.py) and fails when any test failed
#   make test-fast  the C unit tests and the CLI and Python tests of the main build, with the
#                   same table: no sanitizers, no install or wheel tests
BUILD ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
FUZZ_BUILD ?= build-fuzz
RESULTS ?= $(BUILD)/test-results
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
PYTHON ?= python3

.PHONY: all configure demo test test-fast pydeps bench gpu-check format format-check clean fuzz fuzz-regress

# Where nvidia-smi lists no GPU, the CUDA code (when nvcc is here) is compiled to PTX only
# (OUTCORE_CUDA_PTX_ONLY, CMakeLists.txt): still checked, without machine code for absent GPUs.
CUDA_PTX_ONLY ?= $(shell nvidia-smi -L 2>/dev/null | grep -q '^GPU' && echo OFF || echo ON)

configure:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DOUTCORE_CUDA_PTX_ONLY=$(CUDA_PTX_ONLY)

all: configure
	cmake --build $(BUILD) -j $(JOBS)

# The first command: the library and the CLI, nothing else (the tests, benchmarks and examples
# are built by `make all` or `make test` later, in the same build folder).
demo:
	@start=$$(date +%s); \
	$(MAKE) --no-print-directory configure && \
	cmake --build $(BUILD) -j $(JOBS) --target outcore_cli && \
	echo "outcore: the library and the CLI built in $$(( $$(date +%s) - start )) s; the CLI is $(BUILD)/outcore (export PATH=$(abspath $(BUILD)):\$$PATH; to install it, build the rest first: cmake --build $(BUILD) -j && cmake --install $(BUILD) --prefix ~/.local, docs/install.md)" && \
	$(BUILD)/outcore demo

# numpy, scipy and pytest are what the CLI and binding tests compare against.
pydeps:
	@$(PYTHON) -c "import numpy, scipy, pytest" 2>/dev/null || \
	  $(PYTHON) -m pip install --quiet numpy scipy pytest

# Each stage runs through tests/summary.py, which records its outcome in $(RESULTS); a stage
# whose tests fail does not stop the next, and the report at the end exits nonzero.
# Where a clang links libFuzzer (tests/fuzz/fuzz.sh clang) the ASan/UBSan build is made with it
# and builds the fuzz targets too, whose seed corpora the fuzz stage then replays: one
# sanitized build of the library instead of two. A build folder of another compiler is
# configured afresh.
SUMMARY = $(PYTHON) tests/summary.py --results $(RESULTS)
ASAN_ENV = ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1

test: pydeps
	@rm -rf $(RESULTS)
	@$(SUMMARY) step build "build" -- $(MAKE) --no-print-directory all && \
	  $(SUMMARY) ctest main $(BUILD) --output-on-failure -j $(JOBS) || true
	@cc=$$(bash tests/fuzz/fuzz.sh clang 2>/dev/null); cc=$${cc:+$$(command -v $$cc)}; \
	  if [ -n "$$cc" ] && [ -f $(ASAN_BUILD)/CMakeCache.txt ] && \
	     ! grep -qx "CMAKE_C_COMPILER:[A-Z]*=$$cc" $(ASAN_BUILD)/CMakeCache.txt; then \
	    rm -rf $(ASAN_BUILD)/CMakeCache.txt $(ASAN_BUILD)/CMakeFiles; \
	  fi; \
	  $(SUMMARY) step asan-configure "ASan/UBSan build" -- cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug \
	  -DOUTCORE_CUDA=OFF -DOUTCORE_SANITIZE=address,undefined -DCMAKE_C_FLAGS="-O1" \
	  -DCMAKE_DISABLE_FIND_PACKAGE_ZLIB=ON $${cc:+-DCMAKE_C_COMPILER=$$cc -DOUTCORE_FUZZ=ON} && \
	  $(SUMMARY) step asan-build "ASan/UBSan build" -- cmake --build $(ASAN_BUILD) -j $(JOBS) && \
	  $(ASAN_ENV) $(SUMMARY) ctest --prefix "ASan/UBSan: " asan $(ASAN_BUILD) -L "unit|cli" --output-on-failure \
	  -j $(JOBS) || true
	@$(SUMMARY) step tsan-configure "TSan build" -- cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=Debug \
	  -DOUTCORE_CUDA=OFF -DOUTCORE_MPI=OFF -DOUTCORE_SANITIZE=thread -DCMAKE_C_FLAGS="-O1" -DOUTCORE_EXAMPLES=OFF && \
	  $(SUMMARY) step tsan-build "TSan build" -- cmake --build $(TSAN_BUILD) -j $(JOBS) --target threads_tests && \
	  TSAN_OPTIONS=halt_on_error=1 OUTCORE_TEST_QUICK=1 $(SUMMARY) ctest --prefix "TSan: " tsan $(TSAN_BUILD) -L threads \
	  --output-on-failure -j $(JOBS) || true
	@$(SUMMARY) fuzz fuzz "fuzz regressions (seed corpora)" -- env FUZZ_BUILD=$(ASAN_BUILD) \
	  FUZZ_PREBUILT=$(ASAN_BUILD) JOBS=$(JOBS) FUZZ_INSTALL=0 bash tests/fuzz/fuzz.sh regress || true
	@$(SUMMARY) report

test-fast: pydeps
	@rm -rf $(RESULTS)
	@$(SUMMARY) step build "build" -- $(MAKE) --no-print-directory all && \
	  $(SUMMARY) ctest fast $(BUILD) -L "unit|cli|python" --output-on-failure -j $(JOBS) || true
	@$(SUMMARY) report

# libFuzzer targets of every reader, in a clang build of their own (docs/testing.md): each
# target runs over its seed corpus, then fuzzes for FUZZ_SECONDS, or FUZZ_RUNS executions
# when set; nonzero exit on any crash, leak or sanitizer report. fuzz-regress: seeds only.
FUZZ_SECONDS ?= 60
FUZZ_RUNS ?=
fuzz:
	FUZZ_BUILD=$(FUZZ_BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_RUNS=$(FUZZ_RUNS) JOBS=$(JOBS) bash tests/fuzz/fuzz.sh run

fuzz-regress:
	FUZZ_BUILD=$(FUZZ_BUILD) JOBS=$(JOBS) bash tests/fuzz/fuzz.sh regress

bench: all
	$(PYTHON) bench/bench_cpu.py

gpu-check:
	bash bench/gpu_check.sh

# Every C and CUDA file of src/, tools/, tests/ and bench/ is kept in .clang-format's style.
# Headers are formatted as C (clang-format guesses some of them to be Objective-C).
FORMAT_FILES = $(shell find src tools tests bench -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) \
                 -not -path 'tests/data/*' -not -path '*/corpus/*' | sort)
CLANG_FORMAT ?= $(shell command -v clang-format-14 || echo clang-format)

format:
	@for f in $(FORMAT_FILES); do \
	  $(CLANG_FORMAT) --assume-filename="$$(case $$f in *.h) echo $${f%.h}.c;; *) echo $$f;; esac)" < "$$f" > "$$f.fmt" && \
	  { cmp -s "$$f" "$$f.fmt" && rm "$$f.fmt" || { mv "$$f.fmt" "$$f"; echo "formatted $$f"; }; } || exit 1; \
	done

# Checked JOBS at a time, 20 files a process: xargs fails when any file is out of style.
format-check:
	@printf '%s\n' $(FORMAT_FILES) | xargs -P $(JOBS) -n 20 sh -c 'bad=0; for f; do \
	  case $$f in *.h) as=$${f%.h}.c;; *) as=$$f;; esac; \
	  $(CLANG_FORMAT) --dry-run --Werror --assume-filename="$$as" < "$$f" 2>/dev/null || \
	  { echo "$$f: not in the style of .clang-format (make format)"; bad=1; }; \
	done; exit $$bad' sh && echo "format-check: $(words $(FORMAT_FILES)) files in style"

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(FUZZ_BUILD)
