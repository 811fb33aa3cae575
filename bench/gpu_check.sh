#!/usr/bin/env bash
# gpu_check.sh - build, test, sanitize and benchmark the CUDA engine on a machine with a GPU.
#
#   bash bench/gpu_check.sh [build] [test] [sanitize] [devices] [io] [bench [BENCH PARTS...]]
#
# With no argument it does all five ("devices" runs `outcore devices --bandwidth --json`);
# "io" (asked for by name) runs bench/bench_io.sh: host reads, packing, the dense writer and
# Python calls beside cat, dd and memcpy of the same bytes, in each folder of IO_DIR (default
# /dev/shm).
# "bench" may be followed by parts:
#   kernel kernel-200k cublas e2e ooc dense file   bench_gram_cuda's own
#   topk             top-k and threshold (bench_topk_cuda) and the CLI end to end: a packed
#                    .npy of 100000 x 200000 bits to a top-10 .npz
#   sweep            both 1-bit kernels over a grid of shapes (bench_b1_sweep)
#   split            a tile split on K against the whole tile on the wgmma kernel
#                    (bench_b1_split: what the first tiles of a multi-GPU job cost)
#   pricer           the streaming API's pricer example against the textbook numba pricer
#                    (bench/bench_pricer.py)
#   cost             the cost model's validation grid (bench/cost_grid.py; COST_ARGS are
#                    passed to it, COST_TIMEOUT bounds it, default 1500 s)
#   virtual-devices  bench/bench_devices.sh: one GPU split in 2 and 3 logical devices against
#                    the whole device ("devices" alone is the step above)
#   map              bench/bench_map.py: outcore map on the CPU against numpy, numexpr and
#                    the STREAM triad, and on the GPU against the pinned PCIe limit (MAP_ARGS
#                    are passed to it, e.g. "--reductions-only")
#   fortran          Fortran-order inputs against C-order ones of the same values: gram on a
#                    uint8 file (bench/bench_gram_fortran.py), map on files
#                    (bench/bench_map_fortran.py) and on Python arrays on the CPU and the GPU
#                    (bench/bench_map_fortran_arrays.py), each beside numpy where it applies
#   wall             wall time as users see it: bench/wall_targets.sh (CUDA start on one and
#                    every device beside the driver's own, the 200000 x 10^6-bit top-10 job)
#                    and bench/bench_wall.py's ladder (predicted, job and wall seconds on the
#                    CPU, one GPU, every GPU and auto; WALL_ARGS are passed to it)
#   mpi              two MPI ranks sharing GPU 0 against one process (bench/bench_mpi.sh;
#                    needs MPI and mpirun)
#   host-link        what the host feeds the GPUs: pinned copies to 1 and every device,
#                    pinning costs, pageable copies (bench_host_link; HOST_LINK_FILE, a file
#                    of 3 GB or more, adds a registered file mapping) and pinning with and
#                    without huge pages (bench_host_pin), a part's set-up costs
#                    (bench_setup_costs: pinning a ring, device memory mapped to peers, small
#                    device allocations) and
#                    freeing a 24 GiB input on 1-32 threads (bench_discard)
#   matmul           the CUDA matmul backend out of core against cuBLASLt in core on one
#                    product per type, then oc_matmul on the same product resident in device
#                    memory, also with B given as Bᵀ stored (MATMUL_B_TRANSPOSED, int8's layout)
#                    (bench_matmul_cuda; MATMUL_SIZE, default "16384 16384 16384", and
#                    MATMUL_TYPES, default "float64 float32 tf32 float16 bfloat16 int8")
#   matmulxt         cuBLASXt's host-to-host GEMM on the same product (bench_cublasxt) at its
#                    default block and at MATMUL_XT_BLOCKS (default "2048 4096 8192 16384"),
#                    for MATMUL_XT_TYPES (default "float32")
#   matmul-host      matmul as users call it: Python host to host against torch, pageable and
#                    pinned (bench/bench_matmul_torch.py), --backend auto against both backends
#                    on a grid of sizes (bench/matmul_auto_grid.py), and the CPU backend out of
#                    core against the system BLAS in memory (bench/bench_matmul_ooc.py, 12288³
#                    float64 at --host-mem 900M and 256M, 4x and 13.5x A + B + C, each run
#                    paired with a reference call, with the BLAS alone on each plan's calls)
#   matmul-scaling   matmul on several GPUs: 65536 x 65536 x 196608 float32 on GPU 0, then on
#                    every visible GPU, same bytes checked (bench_matmul_cuda with
#                    MATMUL_DEVICE_SETS; MATMUL_SCALING_SIZE overrides the size); NVLink
#                    multicast left off (NCCL_NVLS_ENABLE=0); with OUTCORE_TRACE=1 each device's
#                    set-up, products and last writes are in the log too
#   matmul-files     outcore matmul on .npy files out of core, the reads and writes that are not
#                    plain copies: float32 files as stored, B as Bᵀ stored (--transpose-b), A
#                    in Fortran order, computed as float16, A·Aᵀ (--gram), bool x bool beside
#                    its int32 counts (bench/bench_matmul_files.py; FILES_ARGS are passed to
#                    it); with OLD_SRC
#                    set, the outcore CLI built from it (build-old) runs every case too, the
#                    two alternating, results compared byte for byte
#   matmul-vector    a matrix-vector product from .npy files (a 1-D v): outcore matmul on auto,
#                    the CPU and the GPU beside numpy on the same files, each a process
#                    (bench/bench_matmul_vector.py; VECTOR_ARGS are passed to it)
#   compare          the same benchmarks on another tree (OLD_SRC, a source folder, built in
#                    build-old) and on this one, alternating old, new, old, new: bench_gram_cuda's
#                    COMPARE_PARTS (default "kernel") and the top-k CLI end to end, so that a
#                    change meant to change no speed shows both columns from one lease
#   scaling          several GPUs: strong and weak scaling, MPI ranks against one process,
#                    same bytes on 1, 2, 4 GPUs (bench/bench_scaling.py; SCALING_ARGS are
#                    passed to it, SCALING_TIMEOUT bounds it, default 580 s)
# CMAKE_ARGS are added to the configure step (e.g. -DMPI_C_COMPILER=/path/to/mpicc);
# BUILD_TARGETS, when set, builds only those targets.
# "bench" alone runs bench_gram_cuda's default parts and topk. Logs go to $OUT (or
# /tmp/gpu_check); a short table of every step's result is printed last, the tests' table
# (tests/summary.py: passed, failed and skipped, with the skips' reasons) after it; the exit
# status is 1 when a step failed (a build, a test, a nonzero rc). TEST_TIMEOUT,
# SANITIZE_TIMEOUT and BENCH_TIMEOUT (seconds) bound each step so that a hang cannot eat a
# whole lease (the case table's sanitizer run gets twice SANITIZE_TIMEOUT); SANITIZE_TOOLS
# picks the compute-sanitizer tools (default: memcheck racecheck); TOPK_ARGS are passed to
# bench_topk_cuda (e.g. "--quick --runs 5").
set -u
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build-gpu}
LOGS=${OUT:-/tmp/gpu_check}
mkdir -p "$LOGS"
steps=()
bench_parts=()
for arg in "$@"; do
  case "$arg" in
    build|test|sanitize|devices|bench|io) steps+=("$arg") ;;
    *) bench_parts+=("$arg") ;;
  esac
done
[ ${#steps[@]} -eq 0 ] && steps=(build test sanitize devices bench)
has() { local s; for s in "${steps[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }
summary=()
failed=0
# A step's line in the summary; a line that says FAILED or a nonzero "rc N" makes the script
# exit 1 at the end.
note() {
  summary+=("$(printf '%-10s %s' "$1" "$2")")
  if [[ "$2" == *FAILED* || "$2" =~ (^|[^a-z])rc\ [1-9] ]]; then failed=1; fi
}
# Builds OLD_SRC's targets "$@" in build-old (the tree before a change); fails when OLD_SRC is
# unset or does not build.
build_old() {
  [ -n "${OLD_SRC:-}" ] || return 1
  # shellcheck disable=SC2086 # CMAKE_ARGS is a list of options
  cmake -S "$OLD_SRC" -B build-old -DCMAKE_BUILD_TYPE=Release ${CMAKE_ARGS:-} >"$LOGS/configure_old.log" 2>&1 &&
    cmake --build build-old -j"$(nproc)" --target "$@" >"$LOGS/build_old.log" 2>&1
}

if has build; then
  # shellcheck disable=SC2086 # CMAKE_ARGS is a list of options
  if cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release ${CMAKE_ARGS:-} >"$LOGS/configure.log" 2>&1 &&
     cmake --build "$BUILD" -j"$(nproc)" ${BUILD_TARGETS:+--target $BUILD_TARGETS} >"$LOGS/build.log" 2>&1; then
    note build ok
  else
    tail -30 "$LOGS/build.log"; note build FAILED
  fi
fi

if has test; then
  # Through tests/summary.py, as `make test`: every test's outcome, each skip with its reason,
  # and no test found (a build without its GPU tests) a failure, never a clean pass.
  rm -rf "$LOGS/results"
  tsum() { python3 tests/summary.py --results "$LOGS/results" "$@"; }
  tsum ctest --prefix "GPU: " gpu "$BUILD" -L gpu --no-tests=error --output-on-failure \
    --timeout "${TEST_TIMEOUT:-300}" >"$LOGS/ctest.log" 2>&1
  # numba kernels' real launch limits against `inspect`, and outcore map on the GPU through
  # the CLI and the binding (their GPU cases skip elsewhere).
  tsum ctest --prefix "numba: " numba "$BUILD" -R 'python_test_numba_launch_limits|python_test_stream_numba' \
    --no-tests=error --output-on-failure --timeout "${TEST_TIMEOUT:-300}" >"$LOGS/ctest_numba.log" 2>&1
  tsum ctest --prefix "map: " map "$BUILD" -R 'cli_test_map_cli|python_test_map_numpy|python_test_pinned' \
    --no-tests=error --output-on-failure --timeout "${TEST_TIMEOUT:-300}" >"$LOGS/ctest_map.log" 2>&1
  tsum report | tee "$LOGS/test_report.log"
  rc=${PIPESTATUS[0]}
  [ "$rc" -ne 0 ] && grep -hE "\*\*\*(Failed|Timeout|Exception)" "$LOGS"/ctest*.log | tail -20
  note test "$(tail -1 "$LOGS/test_report.log") (rc $rc)"
fi

if has sanitize; then
  for tool in ${SANITIZE_TOOLS:-memcheck racecheck}; do
    # The case table's quick grid (OUTCORE_TEST_QUICK=1; racecheck, the slowest tool, the
    # smallest, level 2), then the rest of the CUDA engine's test at level 1. The table's
    # level 1 holds what two binaries' quick grids held (dense and selection): twice the time.
    quick=1; [ "$tool" = racecheck ] && quick=2
    OUTCORE_TEST_QUICK=$quick timeout "$((2 * ${SANITIZE_TIMEOUT:-200}))" compute-sanitizer --tool "$tool" --error-exitcode 99 \
      "$BUILD/tests/gpu_test_cuda_cases" >"$LOGS/sanitize_cases_$tool.log" 2>&1
    rc=$?
    tail -4 "$LOGS/sanitize_cases_$tool.log"
    note "$tool" "cases rc $rc: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$LOGS/sanitize_cases_$tool.log" | tail -1)"
    OUTCORE_TEST_QUICK=1 timeout "${SANITIZE_TIMEOUT:-200}" compute-sanitizer --tool "$tool" --error-exitcode 99 \
      "$BUILD/tests/gpu_test_cuda_gram" >"$LOGS/sanitize_$tool.log" 2>&1
    rc=$?
    tail -4 "$LOGS/sanitize_$tool.log"
    note "$tool" "gram rc $rc: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$LOGS/sanitize_$tool.log" | tail -1)"
    # Several logical devices, and user kernels over streamed chunks (without the stream
    # test's deliberate kernel fault, which the tool would report as the error it is).
    # The matmul case table at its quick level (one transpose, device 0).
    for t in gpu_test_cuda_devices gpu_test_stream gpu_test_matmul_cuda gpu_test_matmul_gpu_arrays gpu_test_matmul_pack gpu_test_matmul_cases gpu_test_device_open; do
      OUTCORE_TEST_SKIP_FAULT=1 OUTCORE_TEST_QUICK=1 timeout "${SANITIZE_TIMEOUT:-200}" compute-sanitizer --tool "$tool" --error-exitcode 99 \
        "$BUILD/tests/$t" >"$LOGS/sanitize_${t}_$tool.log" 2>&1
      rc=$?
      note "$tool" "$t rc $rc: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$LOGS/sanitize_${t}_$tool.log" | tail -1)"
    done
  done
fi

if has devices; then
  timeout 120 "$BUILD/outcore" devices --bandwidth --json >"$LOGS/devices.json" 2>"$LOGS/devices.err"
  rc=$?
  cat "$LOGS/devices.json" "$LOGS/devices.err"
  note devices "rc $rc"
fi

topk_bench=0
sweep_bench=0
ksplit_bench=0
pricer_bench=0
cost_bench=0
map_bench=0
fortran_bench=0
gram_parts=()
split_bench=0
mpi_bench=0
scaling_bench=0
wall_bench=0
link_bench=0
matmul_bench=0
matmulxt_bench=0
matmul_host_bench=0
matmul_scaling_bench=0
matmul_files_bench=0
matmul_vector_bench=0
compare_bench=0
for part in "${bench_parts[@]}"; do
  case "$part" in
    topk) topk_bench=1 ;;
    sweep) sweep_bench=1 ;;
    split) ksplit_bench=1 ;;
    pricer) pricer_bench=1 ;;
    cost) cost_bench=1 ;;
    virtual-devices) split_bench=1 ;;
    map) map_bench=1 ;;
    fortran) fortran_bench=1 ;;
    mpi) mpi_bench=1 ;;   # two MPI ranks sharing GPU 0 against one process (bench/bench_mpi.sh)
    scaling) scaling_bench=1 ;;
    wall) wall_bench=1 ;;
    host-link) link_bench=1 ;;
    matmul) matmul_bench=1 ;;
    matmulxt) matmulxt_bench=1 ;;
    matmul-host) matmul_host_bench=1 ;;
    matmul-scaling) matmul_scaling_bench=1 ;;
    matmul-files) matmul_files_bench=1 ;;
    matmul-vector) matmul_vector_bench=1 ;;
    compare) compare_bench=1 ;;
    *) gram_parts+=("$part") ;;
  esac
done
[ ${#bench_parts[@]} -eq 0 ] && topk_bench=1

if has bench && [ $split_bench -eq 1 ]; then
  timeout "${BENCH_TIMEOUT:-400}" bash bench/bench_devices.sh "$BUILD" 2>&1 | tee "$LOGS/bench_devices.log"
  note bench_devices "rc ${PIPESTATUS[0]}"
fi

if has bench && { [ ${#gram_parts[@]} -gt 0 ] || [ ${#bench_parts[@]} -eq 0 ]; }; then
  timeout "${BENCH_TIMEOUT:-400}" "$BUILD/bench/bench_gram_cuda" "${gram_parts[@]}" 2>&1 | tee "$LOGS/bench.log"
  note bench "rc ${PIPESTATUS[0]}"
fi

if has bench && [ $topk_bench -eq 1 ]; then
  # shellcheck disable=SC2086 # TOPK_ARGS is a list of options
  timeout "${BENCH_TIMEOUT:-400}" "$BUILD/bench/bench_topk_cuda" ${TOPK_ARGS:-} 2>&1 | tee "$LOGS/bench_topk.log"
  note bench_topk "rc ${PIPESTATUS[0]}"
  # End to end through the CLI (issue 4's target: under 5 s): read packed bits, write .npz.
  "$BUILD/outcore" gen --rows 100000 --cols 200000 --density 0.05 --packed -o /dev/shm/A.npy >"$LOGS/gen.log" 2>&1
  start=$(date +%s%N)
  timeout 120 "$BUILD/outcore" gram /dev/shm/A.npy --bits 200000 --topk 10 --metric jaccard --gpu-mem 4G \
    -o /dev/shm/top.npz --json >"$LOGS/topk_cli.json" 2>"$LOGS/topk_cli.err"
  rc=$?
  wall_ms=$(( ($(date +%s%N) - start) / 1000000 ))
  cat "$LOGS/topk_cli.json" "$LOGS/topk_cli.err"
  python3 -c "import numpy as np; f = np.load('/dev/shm/top.npz'); print('npz', f['indices'].shape, f['scores'].dtype)" 2>&1
  note topk_cli "rc $rc, wall ${wall_ms} ms (process, load included)"
  rm -f /dev/shm/A.npy /dev/shm/top.npz
fi

if has bench && [ $matmul_bench -eq 1 ]; then
  for t in ${MATMUL_TYPES:-float64 float32 tf32 float16 bfloat16 int8}; do
    # shellcheck disable=SC2086 # MATMUL_SIZE is three numbers
    timeout "${BENCH_TIMEOUT:-400}" "$BUILD/bench/bench_matmul_cuda" ${MATMUL_SIZE:-16384 16384 16384} "$t" 2>&1 |
      tee "$LOGS/bench_matmul_$t.log"
    note "matmul_$t" "rc ${PIPESTATUS[0]}: $(grep -E '^ratio' "$LOGS/bench_matmul_$t.log" | tail -1)"
    # The same product on A, B and C in device memory (oc_matmul as a caller with GPU arrays).
    # shellcheck disable=SC2086 # MATMUL_SIZE is three numbers
    MATMUL_RESIDENT=1 timeout "${BENCH_TIMEOUT:-400}" "$BUILD/bench/bench_matmul_cuda" \
      ${MATMUL_SIZE:-16384 16384 16384} "$t" 2>&1 | tee "$LOGS/bench_matmul_resident_$t.log"
    note "matmul_resident_$t" "rc ${PIPESTATUS[0]}: $(grep -E '^ratio' "$LOGS/bench_matmul_resident_$t.log" | tail -1)"
    # ... with B given as Bᵀ stored (transpose_b): for int8 the layout its kernels read.
    # shellcheck disable=SC2086 # MATMUL_SIZE is three numbers
    MATMUL_RESIDENT=1 MATMUL_B_TRANSPOSED=1 timeout "${BENCH_TIMEOUT:-400}" "$BUILD/bench/bench_matmul_cuda" \
      ${MATMUL_SIZE:-16384 16384 16384} "$t" 2>&1 | tee "$LOGS/bench_matmul_resident_bt_$t.log"
    note "matmul_resident_bt_$t" \
      "rc ${PIPESTATUS[0]}: $(grep -E '^ratio' "$LOGS/bench_matmul_resident_bt_$t.log" | tail -1)"
  done
fi

if has bench && [ $matmulxt_bench -eq 1 ]; then
  for t in ${MATMUL_XT_TYPES:-float32}; do
    # shellcheck disable=SC2086 # MATMUL_SIZE is three numbers, MATMUL_XT_BLOCKS a list
    timeout "${BENCH_TIMEOUT:-400}" "$BUILD/bench/bench_cublasxt" ${MATMUL_SIZE:-16384 16384 16384} "$t" \
      0 ${MATMUL_XT_BLOCKS:-2048 4096 8192 16384} 2>&1 | tee "$LOGS/bench_cublasxt_$t.log"
    note "cublasxt_$t" "rc ${PIPESTATUS[0]}: $(grep -E '^xt' "$LOGS/bench_cublasxt_$t.log" | sort -k4 -n | head -1)"
  done
fi

if has bench && [ $matmul_host_bench -eq 1 ]; then
  OUTCORE_LIBRARY=$PWD/$BUILD/liboutcore.so timeout "${BENCH_TIMEOUT:-400}" python3 bench/bench_matmul_torch.py \
    --runs 2 2>&1 | tee "$LOGS/bench_matmul_torch.log"
  note matmul_torch "rc ${PIPESTATUS[0]}: $(grep -E '^pinned ' "$LOGS/bench_matmul_torch.log" | head -1)"
  timeout "${BENCH_TIMEOUT:-400}" python3 bench/matmul_auto_grid.py --outcore "$BUILD/outcore" --runs 2 \
    --cpu-limit 20 2>&1 | tee "$LOGS/matmul_auto_grid.log"
  note matmul_auto "rc ${PIPESTATUS[0]}: $(grep -E "^# auto's pick" "$LOGS/matmul_auto_grid.log" | tail -1)"
  timeout "${BENCH_TIMEOUT:-400}" python3 bench/bench_matmul_ooc.py --outcore "$BUILD/outcore" \
    --size 12288 12288 12288 --dtype float64 --host-mem 900M,256M --runs 3 --plan-calls 2>&1 |
    tee "$LOGS/bench_matmul_ooc.log"
  note matmul_cpu_ooc "rc ${PIPESTATUS[0]}: $(grep -E '^\| outcore.*host-mem' "$LOGS/bench_matmul_ooc.log" |
    awk -F'|' '{print $3 ":" $9}' | tr '\n' ';')"
fi

if has bench && [ $matmul_scaling_bench -eq 1 ]; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  all=$(seq -s, 0 $((gpus - 1)))
  # shellcheck disable=SC2086 # MATMUL_SCALING_SIZE is a list of sizes
  NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 MATMUL_DEVICE_SETS="0;$all" \
    timeout "${BENCH_TIMEOUT:-400}" "$BUILD/bench/bench_matmul_cuda" ${MATMUL_SCALING_SIZE:-65536 65536 196608} \
    float32 2>&1 | tee "$LOGS/bench_matmul_scaling.log"
  note matmul_scaling "rc ${PIPESTATUS[0]} on $gpus GPUs: $(grep -E '^float32 ' "$LOGS/bench_matmul_scaling.log" | tail -1 | tr -s ' ')"
fi

if has bench && [ $matmul_files_bench -eq 1 ]; then
  before=()
  if [ -n "${OLD_SRC:-}" ]; then
    if build_old outcore_cli; then before=(--before build-old/outcore); else note matmul_files "FAILED: OLD_SRC did not build"; fi
  fi
  # shellcheck disable=SC2086 # FILES_ARGS is a list of options
  timeout "${BENCH_TIMEOUT:-400}" python3 bench/bench_matmul_files.py --outcore "$BUILD/outcore" "${before[@]}" \
    ${FILES_ARGS:-} 2>&1 | tee "$LOGS/bench_matmul_files.log"
  note matmul_files "rc ${PIPESTATUS[0]}: $(grep -E '^[a-z0-9-]+ +(this|before) ' "$LOGS/bench_matmul_files.log" |
    awk '{print $1 " " $2 " " $4 " s"}' | tr '\n' ';')"
fi

if has bench && [ $matmul_vector_bench -eq 1 ]; then
  # shellcheck disable=SC2086 # VECTOR_ARGS is a list of options
  timeout "${BENCH_TIMEOUT:-400}" python3 bench/bench_matmul_vector.py --outcore "$BUILD/outcore" ${VECTOR_ARGS:-} 2>&1 |
    tee "$LOGS/bench_matmul_vector.log"
  note matmul_vector "rc ${PIPESTATUS[0]}: $(grep -E '^(numpy|auto|cpu|cuda) ' "$LOGS/bench_matmul_vector.log" |
    awk '{print $1 " " $2 " s"}' | tr '\n' ';')"
fi

if has bench && [ $compare_bench -eq 1 ]; then
  if ! build_old bench_gram_cuda outcore_cli; then
    note compare "FAILED: OLD_SRC=${OLD_SRC:-unset} did not build"
  else
    "$BUILD/outcore" gen --rows 100000 --cols 200000 --density 0.05 --packed -o /dev/shm/A.npy >/dev/null 2>&1
    for round in 1 2; do
      for tree in old new; do
        b=build-old; [ $tree = new ] && b=$BUILD
        # shellcheck disable=SC2086 # COMPARE_PARTS is a list of parts
        timeout "${BENCH_TIMEOUT:-400}" "$b/bench/bench_gram_cuda" ${COMPARE_PARTS:-kernel} >"$LOGS/compare_${tree}_$round.log" 2>&1
        rc=$?
        start=$(date +%s%N)
        timeout 120 "$b/outcore" gram /dev/shm/A.npy --bits 200000 --topk 10 --metric jaccard --gpu-mem 4G \
          -o /dev/shm/top.npz --json >"$LOGS/compare_cli_${tree}_$round.json" 2>&1
        wall_ms=$(( ($(date +%s%N) - start) / 1000000 ))
        note "compare" "$tree round $round: bench rc $rc, $(grep -E '^\| [a-z]' "$LOGS/compare_${tree}_$round.log" | grep -v '^| case' | head -3 | tr -s ' ' | tr '\n' ';') top-k CLI ${wall_ms} ms"
        rm -f /dev/shm/top.npz
      done
    done
    rm -f /dev/shm/A.npy
  fi
fi

if has bench && [ $sweep_bench -eq 1 ]; then
  # Both 1-bit kernels over a grid of shapes, outputs compared in full (bench_b1_sweep.cu).
  timeout "${BENCH_TIMEOUT:-400}" "$BUILD/bench/bench_b1_sweep" 2>&1 | tee "$LOGS/bench_sweep.log"
  note sweep "rc ${PIPESTATUS[0]}"
fi

if has bench && [ $ksplit_bench -eq 1 ]; then
  # A tile of the strong-scaling job whole and in 2, 4, 8 slices of K, counts compared in full.
  timeout "${BENCH_TIMEOUT:-400}" "$BUILD/bench/bench_b1_split" --slices 2,4,8 2>&1 | tee "$LOGS/bench_split.log"
  note bench_split "rc ${PIPESTATUS[0]}"
fi

if has bench && [ $pricer_bench -eq 1 ]; then
  BUILD="$BUILD" timeout "${BENCH_TIMEOUT:-400}" python3 bench/bench_pricer.py 2>&1 | tee "$LOGS/bench_pricer.log"
  note bench_pricer "rc ${PIPESTATUS[0]}"
fi

if has bench && [ $cost_bench -eq 1 ]; then
  # The cost model's validation grid (docs/cost-model.md): cpu, cuda and auto on every job.
  # shellcheck disable=SC2086 # COST_ARGS is a list of options
  timeout "${COST_TIMEOUT:-1500}" python3 bench/cost_grid.py --outcore "$BUILD/outcore" ${COST_ARGS:-} 2>&1 |
    tee "$LOGS/cost_grid.log"
  note cost_grid "rc ${PIPESTATUS[0]}: $(grep -E '^summary' "$LOGS/cost_grid.log" | tail -1)"
fi

if has bench && [ $map_bench -eq 1 ]; then
  # outcore map on the host's CPU against numpy, numexpr and the STREAM triad, and the memory-bound
  # cases on the GPU against the pinned PCIe limit (bench/bench_map.py --gpu).
  # shellcheck disable=SC2086 # MAP_ARGS is a list of options
  timeout "${BENCH_TIMEOUT:-400}" python3 bench/bench_map.py --binary "$BUILD/outcore" --gpu ${MAP_ARGS:-} 2>&1 |
    tee "$LOGS/bench_map.log"
  note bench_map "rc ${PIPESTATUS[0]}"
fi

if has bench && [ $fortran_bench -eq 1 ]; then
  # Fortran-order files and arrays read in place, beside the C-order ones and numpy.
  timeout "${BENCH_TIMEOUT:-400}" python3 bench/bench_gram_fortran.py --binary "$BUILD/outcore" 2>&1 |
    tee "$LOGS/bench_gram_fortran.log"
  note gram_fortran "rc ${PIPESTATUS[0]}: $(grep -E '^Fortran' "$LOGS/bench_gram_fortran.log" | tr -s ' ')"
  timeout "${BENCH_TIMEOUT:-400}" python3 bench/bench_map_fortran.py --binary "$BUILD/outcore" 2>&1 |
    tee "$LOGS/bench_map_fortran.log"
  note map_fortran "rc ${PIPESTATUS[0]}"
  for backend in cpu cuda; do
    PYTHONPATH=$PWD/python OUTCORE_LIBRARY=$PWD/$BUILD/liboutcore.so timeout "${BENCH_TIMEOUT:-400}" python3 \
      bench/bench_map_fortran_arrays.py --backend $backend 2>&1 | tee "$LOGS/bench_map_fortran_arrays_$backend.log"
    note "map_f_$backend" "rc ${PIPESTATUS[0]}: $(grep -E '^outcore.map, Fortran' "$LOGS/bench_map_fortran_arrays_$backend.log" | tr -s ' ')"
  done
fi

if has bench && [ $wall_bench -eq 1 ]; then
  # The CUDA start and the big top-k job's wall time, then the ladder's predictions; a rate
  # cache of the run's own, so the first job's measurement is part of what is shown.
  timeout "${BENCH_TIMEOUT:-400}" bash bench/wall_targets.sh "$BUILD" 3 2>&1 | tee "$LOGS/wall_targets.log"
  note wall_targets "rc ${PIPESTATUS[0]}"
  # shellcheck disable=SC2086 # WALL_ARGS is a list of options
  OUTCORE_COST_CACHE="$LOGS/rates.txt" timeout "${BENCH_TIMEOUT:-400}" python3 bench/bench_wall.py \
    --outcore "$BUILD/outcore" ${WALL_ARGS:---runs 2 --max-work 20} 2>&1 | tee "$LOGS/bench_wall.log"
  note bench_wall "rc ${PIPESTATUS[0]}: $(grep -c 'prediction within' "$LOGS/bench_wall.log") jobs"
fi

if has io; then
  # Host side at its physical references (bench/bench_io.sh): packed and 0/1 .npy reads,
  # the dense writer, cat and dd of the same bytes, Python per-call times, torch _int_mm.
  # IO_DIR may name several folders (a memory file system and a local disk: "/dev/shm /tmp").
  : >"$LOGS/bench_io.log"
  for io_dir in ${IO_DIR:-/dev/shm}; do
    BUILD="$BUILD" timeout "${BENCH_TIMEOUT:-400}" bash bench/bench_io.sh "$io_dir" 2>&1 | tee -a "$LOGS/bench_io.log"
    note io "$io_dir: rc ${PIPESTATUS[0]}"
  done
fi

if has bench && [ $mpi_bench -eq 1 ]; then
  timeout "${BENCH_TIMEOUT:-400}" bash bench/bench_mpi.sh "$BUILD" cuda 2>&1 | tee "$LOGS/bench_mpi.log"
  note bench_mpi "rc ${PIPESTATUS[0]}: $(grep -c identical "$LOGS/bench_mpi.log") identical, $(grep -c DIFFER "$LOGS/bench_mpi.log") differ"
fi

if has bench && [ $link_bench -eq 1 ]; then
  # shellcheck disable=SC2086 # HOST_LINK_FILE is one optional path
  timeout "${BENCH_TIMEOUT:-400}" "$BUILD/bench/bench_host_link" ${HOST_LINK_FILE:-} 2>&1 | tee "$LOGS/bench_host_link.log"
  note bench_host_link "rc ${PIPESTATUS[0]}"
  timeout "${BENCH_TIMEOUT:-400}" "$BUILD/bench/bench_host_pin" 2>&1 | tee "$LOGS/bench_host_pin.log"
  note bench_host_pin "rc ${PIPESTATUS[0]}"
  timeout "${BENCH_TIMEOUT:-400}" "$BUILD/bench/bench_setup_costs" 2>&1 | tee "$LOGS/bench_setup_costs.log"
  note bench_setup_costs "rc ${PIPESTATUS[0]}"
  timeout "${BENCH_TIMEOUT:-400}" "$BUILD/bench/bench_discard" 24 32 2>&1 | tee "$LOGS/bench_discard.log"
  note bench_discard "rc ${PIPESTATUS[0]}"
fi

if has bench && [ $scaling_bench -eq 1 ]; then
  # Several GPUs of one host (bench/bench_scaling.py): each part's table as it finishes.
  # shellcheck disable=SC2086 # SCALING_ARGS is a list of options
  PYTHONUNBUFFERED=1 timeout "${SCALING_TIMEOUT:-580}" python3 bench/bench_scaling.py --outcore "$BUILD/outcore" \
    --markdown "$LOGS/scaling.md" ${SCALING_ARGS:-} 2>&1 | tee "$LOGS/bench_scaling.log"
  note bench_scaling "rc ${PIPESTATUS[0]}"
fi

echo
echo "== gpu_check summary ($(date -u +%F) $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1))"
printf '%s\n' "${summary[@]}"
[ -f "$LOGS/bench.log" ] && has bench && grep -E '^\|' "$LOGS/bench.log"
[ -f "$LOGS/bench_topk.log" ] && has bench && grep -E '^\|' "$LOGS/bench_topk.log"
[ -f "$LOGS/bench_sweep.log" ] && has bench && grep -E '^\|' "$LOGS/bench_sweep.log"
[ -f "$LOGS/bench_pricer.log" ] && has bench && grep -E '^\||^numba' "$LOGS/bench_pricer.log"
[ -f "$LOGS/bench_devices.log" ] && has bench && grep -E '^\|' "$LOGS/bench_devices.log"
[ -f "$LOGS/bench_map.log" ] && has bench && grep -E '^\|' "$LOGS/bench_map.log"
[ -f "$LOGS/bench_io.log" ] && has io && grep -E '^\|' "$LOGS/bench_io.log"
[ -f "$LOGS/bench_mpi.log" ] && has bench && grep -E '^\|' "$LOGS/bench_mpi.log"
[ -f "$LOGS/bench_host_link.log" ] && has bench && grep -E 'GB/s' "$LOGS/bench_host_link.log"
[ -f "$LOGS/bench_host_pin.log" ] && has bench && grep -E 'GB/s' "$LOGS/bench_host_pin.log"
[ -f "$LOGS/bench_scaling.log" ] && has bench && grep -E '^\||^efficiency|^- ' "$LOGS/bench_scaling.log"
[ -f "$LOGS/test_report.log" ] && has test && sed -n '/^=/,$p' "$LOGS/test_report.log"
exit $failed
