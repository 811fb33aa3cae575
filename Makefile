# The two set-up commands of the README:
#   make demo   builds outcore and runs the main job on a built-in example (GPU when usable)
#   make test   builds everything and runs every test, then the C tests again under
#               AddressSanitizer and UndefinedBehaviorSanitizer in a build without zlib (its
#               own CRC-32 then writes the .npz files, which the top-k CLI tests read back),
#               and those whose threads share state under ThreadSanitizer
BUILD ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
PYTHON ?= python3

.PHONY: all demo test test-fast pydeps bench gpu-check format format-check clean fuzz fuzz-regress

all:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD) -j $(JOBS)

demo: all
	$(BUILD)/outcore demo

# numpy, scipy and pytest are what the CLI and binding tests compare against.
pydeps:
	@$(PYTHON) -c "import numpy, scipy, pytest" 2>/dev/null || \
	  $(PYTHON) -m pip install --quiet numpy scipy pytest

test: pydeps all
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DOUTCORE_CUDA=OFF \
	  -DOUTCORE_SANITIZE=address,undefined -DCMAKE_C_FLAGS="-O1" -DCMAKE_DISABLE_FIND_PACKAGE_ZLIB=ON
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --test-dir $(ASAN_BUILD) -L unit --output-on-failure -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 OUTCORE_BIN=$(ASAN_BUILD)/outcore \
	  OUTCORE_SOURCE_DIR=$(CURDIR) $(PYTHON) -m pytest -q -rs tests/cli/test_topk_cli.py \
	  tests/cli/test_write_faults.py
	cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DOUTCORE_CUDA=OFF -DOUTCORE_MPI=OFF \
	  -DOUTCORE_SANITIZE=thread -DCMAKE_C_FLAGS="-O1" -DOUTCORE_EXAMPLES=OFF
	cmake --build $(TSAN_BUILD) -j $(JOBS)
	TSAN_OPTIONS=halt_on_error=1 ctest --test-dir $(TSAN_BUILD) -L threads --output-on-failure -j $(JOBS)

# libFuzzer targets of every reader, in a clang build of their own (docs/testing.md): each
# target runs over its seed corpus, then fuzzes for FUZZ_SECONDS, or FUZZ_RUNS executions
# when set; nonzero exit on any crash, leak or sanitizer report. fuzz-regress: seeds only.
FUZZ_BUILD ?= build-fuzz
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

# The files kept in .clang-format's style (docs/design-notes.md, "Code format"); a file joins
# the list in a change of its own that only reformats it.
FORMAT_FILES = $(sort $(wildcard src/inspect/*.c src/inspect/*.h))
CLANG_FORMAT ?= clang-format

format:
	$(CLANG_FORMAT) -i $(FORMAT_FILES)

format-check:
	$(CLANG_FORMAT) --dry-run --Werror $(FORMAT_FILES)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
