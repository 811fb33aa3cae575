#!/usr/bin/env bash
# profile_b1.sh - where the b1 Gram kernel's time goes: Nsight Compute on one launch of the
# kernel benchmark's case (A·Aᵀ n=32768 m=524288, counts on the device).
#
#   bash bench/profile_b1.sh [BUILD]      (BUILD defaults to build-gpu, made by gpu_check.sh;
#                                         PROFILE_KERNEL=gram_wgmma profiles the wgmma kernel)
#
# Prints the speed-of-light figures (SM, tensor pipe, L2, DRAM), the L2 traffic the kernel
# generates per bit-MAC, shared-memory bank conflicts and the top warp stall reasons: what
# bounds the kernel before a faster MMA instruction can help. Logs go to $OUT (or /tmp).
set -u
cd "$(dirname "$0")/.."
BUILD=${1:-build-gpu}
LOGS=${OUT:-/tmp}
metrics=sm__throughput.avg.pct_of_peak_sustained_elapsed
metrics+=,sm__pipe_tensor_op_imma_cycles_active.avg.pct_of_peak_sustained_elapsed
metrics+=,lts__throughput.avg.pct_of_peak_sustained_elapsed
metrics+=,lts__t_bytes.sum,lts__t_bytes.sum.per_second
metrics+=,dram__throughput.avg.pct_of_peak_sustained_elapsed
metrics+=,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum
metrics+=,smsp__average_warp_latency_issue_stalled_barrier,smsp__average_warp_latency_issue_stalled_long_scoreboard
metrics+=,smsp__average_warp_latency_issue_stalled_math_pipe_throttle,smsp__average_warp_latency_issue_stalled_short_scoreboard
metrics+=,smsp__average_warp_latency_issue_stalled_mio_throttle,smsp__average_warp_latency_issue_stalled_lg_throttle
metrics+=,gpu__time_duration.sum
timeout 300 ncu --kernel-name "regex:${PROFILE_KERNEL:-gram_b1}" --launch-skip 1 --launch-count 1 --metrics "$metrics" \
  "$BUILD/bench/bench_gram_cuda" kernel >"$LOGS/profile_b1.log" 2>&1
rc=$?
grep -E "gram_b1|gram_wgmma|^\s+(sm__|lts__|dram__|l1tex__|smsp__|gpu__)" "$LOGS/profile_b1.log" | head -40
[ $rc -ne 0 ] && tail -20 "$LOGS/profile_b1.log"
exit $rc
