#!/usr/bin/env bash
# tests/gpu/resume_kill.sh - on a GPU host: top-k jobs (A·Aᵀ and A·Bᵀ) on one device and on two,
# killed with kill -9 after a checkpoint, resumed (on another device count too), and compared
# byte for byte (cmp) with an uninterrupted run on one device. Exit 0: every case identical;
# 1: a difference or a failed run (the log says which); 77: no usable GPU (skipped).
#
#   tests/gpu/resume_kill.sh [BUILD_DIR]        (default: build; or OUTCORE_BIN=path/to/outcore)
#
# Environment: ROWS, COLS (the generated inputs, default 30000 x 2048), K (top-k, default 10),
# STEP_TIMEOUT (seconds any one run may take, default 600), KEEP=1 keeps the work folder.
# Two devices are GPUs 0 and 1 when the host has two, else two halves of GPU 0 (--devices 0:2).
#
# Each case: (1) a run killed by itself right after its third checkpoint
# (OUTCORE_RESUME_KILL_AFTER, a SIGKILL at a known point), (2) a run on the other device count
# killed from outside with kill -9 once it has written a checkpoint of its own (the snapshot's
# modification time changes), (3) the run that finishes. Checkpoints come after every group of
# tiles (OUTCORE_RESUME_INTERVAL=0) on tiles of 256 rows, so each kill lands mid-job. One more
# case starts on the CPU (killed likewise) and finishes on two devices.
set -u

build=${1:-build}
bin=${OUTCORE_BIN:-$build/outcore}
rows=${ROWS:-30000}
cols=${COLS:-2048}
k=${K:-10}
step_timeout=${STEP_TIMEOUT:-600}
export SOURCE_DATE_EPOCH=1700000000 # .npz members carry a time: every run writes this one

say() { printf 'resume_kill: %s\n' "$*"; }
fail() {
    say "FAIL: $*" >&2
    exit 1
}

[ -x "$bin" ] || fail "$bin is not an executable outcore (give the build folder or OUTCORE_BIN)"
work=$(mktemp -d "${TMPDIR:-/tmp}/resume_kill.XXXXXX") || fail "cannot make a work folder"
if [ "${KEEP:-0}" = 1 ]; then say "work folder: $work"; else trap 'rm -rf "$work"' EXIT; fi

# A run with a time limit; its stderr is kept for the log.
limited() {
    local log=$1
    shift
    timeout -s KILL "$step_timeout" "$bin" "$@" 2>"$log"
}

# --- the GPU, and what "two devices" is here
"$bin" gen --rows 8 --cols 64 --density 0.5 --seed 1 -q -o "$work/probe.npy" 2>"$work/probe.log" ||
    fail "outcore gen failed: $(cat "$work/probe.log")"
if ! limited "$work/probe.log" gram "$work/probe.npy" --backend cuda -q -o "$work/probe_c.npy"; then
    say "SKIP: no usable GPU: $(head -c 300 "$work/probe.log")"
    exit 77
fi
if limited "$work/probe.log" gram "$work/probe.npy" --devices 0,1 -q -o "$work/probe_c2.npy"; then
    two="0,1"
else
    two="0:2"
fi
say "binary $bin; inputs ${rows} x ${cols} (B: $((rows * 3 / 4)) rows); k = $k; two devices: --devices $two"

"$bin" gen --rows "$rows" --cols "$cols" --density 0.05 --seed 11 -q -o "$work/A.npy" 2>"$work/gen.log" ||
    fail "outcore gen A: $(cat "$work/gen.log")"
"$bin" gen --rows $((rows * 3 / 4)) --cols "$cols" --density 0.05 --seed 12 -q -o "$work/B.npy" 2>"$work/gen.log" ||
    fail "outcore gen B: $(cat "$work/gen.log")"

# A background run killed with kill -9 once the snapshot changes (a checkpoint of this run).
# Returns 0 when the kill landed, 2 when the job ended first, 1 on a failure.
kill_after_checkpoint() {
    local out=$1 log=$2
    shift 2
    local snap="$out.outcore-journal.topk" before=none
    [ -e "$snap" ] && before=$(stat -c %Y.%s "$snap" 2>/dev/null)
    "$bin" "$@" -o "$out" --resume 2>"$log" &
    local pid=$! waited=0
    while kill -0 "$pid" 2>/dev/null; do
        if [ -e "$snap" ] && [ "$(stat -c %Y.%s "$snap" 2>/dev/null)" != "$before" ]; then
            kill -9 "$pid" 2>/dev/null
            wait "$pid" 2>/dev/null
            return 0
        fi
        sleep 0.05
        waited=$((waited + 1))
        if [ "$waited" -gt $((step_timeout * 20)) ]; then
            kill -9 "$pid" 2>/dev/null
            wait "$pid" 2>/dev/null
            say "the run did not checkpoint within ${step_timeout} s: $(tail -c 300 "$log")" >&2
            return 1
        fi
    done
    wait "$pid"
    local rc=$?
    [ "$rc" -eq 0 ] && return 2
    say "the run failed (exit $rc) before any checkpoint: $(tail -c 300 "$log")" >&2
    return 1
}

failures=0
check_case() { # name, first device list, second device list, gram arguments...
    local name=$1 first=$2 second=$3
    shift 3
    local dir="$work/$name" ref out
    mkdir -p "$dir"
    ref="$dir/ref.npz"
    out="$dir/nn.npz"
    say "$name: uninterrupted run on --devices 0"
    limited "$dir/ref.log" gram "$@" --devices 0 -q -o "$ref" || {
        say "$name: FAIL: the uninterrupted run failed: $(tail -c 300 "$dir/ref.log")" >&2
        return 1
    }
    say "$name: run 1 on --devices $first, SIGKILL right after its third checkpoint"
    local started=$SECONDS
    # (a subshell: the shell's own "Killed" line for the expected SIGKILL stays out of the log)
    (OUTCORE_RESUME_INTERVAL=0 OUTCORE_RESUME_KILL_AFTER=3 \
        limited "$dir/run1.log" gram "$@" --devices "$first" --tile 256 -q -o "$out" --resume) 2>/dev/null
    local rc=$?
    if [ $((SECONDS - started)) -ge "$step_timeout" ]; then
        say "$name: FAIL: run 1 ran past ${step_timeout} s (STEP_TIMEOUT) and was stopped" >&2
        return 1
    fi
    if [ "$rc" -ne 137 ]; then
        say "$name: FAIL: run 1 was to die by SIGKILL (137), exit $rc: $(tail -c 300 "$dir/run1.log")" >&2
        return 1
    fi
    [ -e "$out.outcore-journal" ] || {
        say "$name: FAIL: run 1 left no journal" >&2
        return 1
    }
    say "$name: run 2 on --devices $second, kill -9 after a checkpoint of its own"
    OUTCORE_RESUME_INTERVAL=0 kill_after_checkpoint "$out" "$dir/run2.log" gram "$@" --devices "$second" -q
    case $? in
    0) say "$name: run 2 killed" ;;
    2) say "$name: run 2 finished before the kill (make ROWS larger for a kill there); its output is compared" ;;
    *)
        say "$name: FAIL: run 2" >&2
        return 1
        ;;
    esac
    if [ ! -e "$out" ]; then
        say "$name: run 3 on --devices $first, to the end"
        limited "$dir/run3.log" gram "$@" --devices "$first" -q -o "$out" --resume || {
            say "$name: FAIL: the resumed run failed: $(tail -c 300 "$dir/run3.log")" >&2
            return 1
        }
    fi
    if ! cmp "$ref" "$out"; then
        say "$name: FAIL: the resumed output differs from the uninterrupted one" >&2
        return 1
    fi
    local left="" f
    for f in "$out".*; do [ -e "$f" ] && left="$left ${f##*/}"; done
    if [ -n "$left" ]; then
        say "$name: FAIL: files left beside the output: $left" >&2
        return 1
    fi
    say "$name: ok (identical bytes)"
}

# A journal the CPU started (same tile edge) finished on two devices: the snapshot's format is
# one for every backend and device count.
check_cpu_then_gpu() {
    local dir="$work/cpu_then_gpu" out
    mkdir -p "$dir"
    out="$dir/nn.npz"
    say "cpu_then_gpu: uninterrupted run on --devices 0"
    limited "$dir/ref.log" gram "$work/A.npy" --metric jaccard --topk "$k" --devices 0 -q -o "$dir/ref.npz" || {
        say "cpu_then_gpu: FAIL: the uninterrupted run failed: $(tail -c 300 "$dir/ref.log")" >&2
        return 1
    }
    say "cpu_then_gpu: run 1 on the CPU, SIGKILL right after its third checkpoint"
    (OUTCORE_RESUME_INTERVAL=0 OUTCORE_RESUME_KILL_AFTER=3 limited "$dir/run1.log" gram "$work/A.npy" --metric jaccard \
        --topk "$k" --backend cpu --tile 256 -q -o "$out" --resume) 2>/dev/null
    local rc=$?
    if [ "$rc" -ne 137 ]; then
        say "cpu_then_gpu: FAIL: run 1 was to die by SIGKILL (137), exit $rc: $(tail -c 300 "$dir/run1.log")" >&2
        return 1
    fi
    say "cpu_then_gpu: run 2 on --devices $two, to the end"
    limited "$dir/run2.log" gram "$work/A.npy" --metric jaccard --topk "$k" --devices "$two" -q -o "$out" --resume || {
        say "cpu_then_gpu: FAIL: the resumed run failed: $(tail -c 300 "$dir/run2.log")" >&2
        return 1
    }
    cmp "$dir/ref.npz" "$out" || {
        say "cpu_then_gpu: FAIL: the resumed output differs from the uninterrupted one" >&2
        return 1
    }
    say "cpu_then_gpu: ok (identical bytes)"
}

check_cpu_then_gpu || failures=$((failures + 1))
for metric in jaccard cosine; do
    kk=$k
    [ "$metric" = cosine ] && kk=$((k + 3))
    check_case "aat_${metric}_one" 0 "$two" "$work/A.npy" --metric "$metric" --topk "$kk" || failures=$((failures + 1))
    check_case "aat_${metric}_two" "$two" 0 "$work/A.npy" --metric "$metric" --topk "$kk" || failures=$((failures + 1))
    check_case "abt_${metric}_two" "$two" "$two" "$work/A.npy" "$work/B.npy" --metric "$metric" --topk "$kk" ||
        failures=$((failures + 1))
done

if [ "$failures" -ne 0 ]; then
    say "FAIL: $failures case(s) differ or failed"
    exit 1
fi
say "PASS: every resumed top-k output is identical to an uninterrupted run's"
