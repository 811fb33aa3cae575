#!/usr/bin/env python3
"""Several GPUs of one host: strong and weak scaling of A·Aᵀ, MPI ranks against one process,
and the same bytes on any number of devices.

    python3 bench/bench_scaling.py [--outcore build-gpu/outcore] [--dir /var/tmp/oc_scaling]
        [--parts identical,strong,mpi,weak] [--gpus 1,2,4] [--virtual] [--runs 2]
        [--strong-rows 200000] [--strong-cols 1000000] [--weak-rows 1000000]
        [--weak-cols 1000000] [--host-mem 64G] [--mpiexec mpiexec] [--panel-exchange on|off|both]
        [--split-k default,0,12:4]
        [--trace] [--trace-dir DIR] [--keep]
        [--markdown FILE]

Parts (each prints its markdown table as soon as it is done; --markdown collects them):
  identical  a small job (dense counts .npy, top-10 jaccard .npz, threshold jaccard >= 0.5
             .npz) on the CPU and on 1, 2, 4 GPUs: every output byte for byte the CPU's.
  strong     A of --strong-rows x --strong-cols bits (density 0.05, near-duplicates planted),
             a packed .npy in --dir (a local disk, not /dev/shm), to its top-10 jaccard and its
             jaccard >= 0.5 pairs on 1, 2, 4 GPUs (`--devices 0,1,...`): best of --runs, the
             job's seconds (oc_gram's, file reading included: the input stays in its file) and
             the process's wall time; efficiency = rate on g GPUs / (g x rate on 1) of this run.
             --panel-exchange both adds rows with every device staging every panel from the
             host itself (OUTCORE_PANEL_EXCHANGE=0) beside the default (panels shared);
             --split-k default,0,12:4 rows with the first tiles split on K as the default
             does, every tile whole, and the first 12 panels in 4 slices
             (OUTCORE_CUDA_SPLIT_K).
  mpi        the strong jobs with `mpiexec -n G`, one rank per GPU (`--device
             $MPI_LOCALRANKID`), against one process with `--devices` over the same G GPUs:
             wall times and whether the files are identical (needs outcore built with MPI).
  weak       the goal size, --weak-rows x --weak-cols bits (125 GB packed by default) in
             --dir, to its top-10 jaccard on all GPUs under --host-mem: wall, per-GPU busy
             fraction, bytes moved each way, peak host memory (the process's maximum resident
             set, from wait4) and each GPU's peak.

--trace adds, to the strong part, one traced run of each job on the fewest and the most
devices: a table of OUTCORE_TRACE's phases (the shared set-up, peer access, each part's
set-up, set-up and tiles, the lists' merge, teardown, the release after the job and each
part's close, each device's busy and idle time) and each whole trace as a file in
--trace-dir.

--virtual splits GPU 0 into logical devices (`0:2`, `0:4`) instead: a rehearsal of the script
on a one-GPU machine (efficiency is then the rate against the whole GPU's: the split's cost,
not scaling).

NVLink multicast stays off in every process started here (NCCL_NVLS_ENABLE=0 and the others
the lent machines name), though outcore itself uses neither NCCL nor multicast.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ENV = dict(os.environ, NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1", NVSHMEM_DISABLE_NVLS="1",
           SOURCE_DATE_EPOCH="1700000000")
TABLES = []


def emit(text):
    print(text, flush=True)
    TABLES.append(text)


def run(cmd, out_json=None, env=ENV):
    """Runs cmd; returns (wall seconds, peak resident bytes of the process tree's largest
    member as wait4 reports it, parsed JSON of stdout or None)."""
    t0 = time.perf_counter()
    with open(out_json or os.devnull, "w") as out:
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE, env=env, text=True)
        _, status, usage = os.wait4(p.pid, 0)
        err = p.stderr.read()
        p.stderr.close()
    wall = time.perf_counter() - t0
    rc = os.waitstatus_to_exitcode(status)
    if rc != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))}: exit {rc}: {err.strip()[-600:]}")
    data = json.load(open(out_json)) if out_json else None
    return wall, usage.ru_maxrss * 1024, data


def same_output(a, b):
    """Byte-identical results: .npy files whole; .npz by member (zip headers hold a time)."""
    if str(a).endswith(".npz"):
        x, y = np.load(a), np.load(b)
        return sorted(x.files) == sorted(y.files) and all(x[k].tobytes() == y[k].tobytes() for k in x.files)
    return subprocess.run(["cmp", "-s", str(a), str(b)]).returncode == 0


def gpus(outcore):
    """The GPUs `outcore devices --json` lists (empty without a usable one)."""
    out = subprocess.run([outcore, "devices", "--json"], capture_output=True, text=True, env=ENV)
    return json.loads(out.stdout).get("gpus", []) if out.returncode == 0 else []


def spec(g, virtual):
    return f"0:{g}" if virtual and g > 1 else ",".join(str(d) for d in range(g))


JOBS = {  # name -> (gram arguments, output extension)
    "dense": ([], "npy"),
    "top-10": (["--metric", "jaccard", "--topk", "10"], "npz"),
    "threshold": (["--metric", "jaccard", "--threshold", "0.5"], "npz"),
}


def gen(args, path, rows, cols):
    if path.exists():
        return 0.0
    wall, _, _ = run([args.outcore, "gen", "--rows", str(rows), "--cols", str(cols), "--density", "0.05",
                      "--plant", str(max(1, rows // 200)), "--packed", "-o", str(path)])
    print(f"generated {path} ({path.stat().st_size / 1e9:.1f} GB) in {wall:.1f} s", flush=True)
    return wall


def gram(args, a, bits, job, out, extra, env=ENV):
    flags, _ = JOBS[job]
    cmd = [args.outcore, "gram", str(a), "--bits", str(bits), *flags, *extra, "-o", str(out), "--json", "--quiet"]
    return run(cmd, out_json=str(out) + ".json", env=env)


def part_identical(args, d):
    rows, cols = 12000, 100000
    a = d / "small.npy"
    gen(args, a, rows, cols)
    lines = [f"### Same bytes on any number of devices: A {rows} x {cols} bits",
             "", "| job | CPU | " + " | ".join(f"{g} GPU" for g in args.gpus) + " |",
             "|---|---|" + "---|" * len(args.gpus)]
    ok = True
    for job, (_, ext) in JOBS.items():
        ref = d / f"small_cpu.{ext}"
        gram(args, a, cols, job, ref, ["--backend", "cpu"])
        cells = []
        for g in args.gpus:
            out = d / f"small_{g}.{ext}"
            gram(args, a, cols, job, out, ["--backend", "cuda", "--algorithm", "dense", "--devices", spec(g, args.virtual)])
            same = same_output(ref, out)
            ok &= same
            cells.append("identical" if same else "DIFFERENT")
            out.unlink()
        ref.unlink()
        lines.append(f"| {job} | reference | " + " | ".join(cells) + " |")
    emit("\n".join(lines) + "\n")
    return ok


def best_of(args, a, bits, job, out, extra, env=ENV):
    best = None
    for _ in range(args.runs):
        wall, rss, data = gram(args, a, bits, job, out, extra, env)
        if best is None or data["seconds"] < best[2]["seconds"]:
            best = (wall, rss, data)
    return best


def devices_cell(data):
    devs = data.get("devices") or []
    if not devs:
        return f"H2D {data['gpu']['bytes_h2d'] / 1e9:.1f} GB"
    return ", ".join(f"{x['tiles']} tiles {100 * x['busy_seconds'] / data['seconds']:.0f}% busy, H2D "
                     f"{x['bytes_h2d'] / 1e9:.1f} GB" for x in devs)


TRACE_HEADER = ("| job | devices | shared set-up s | peer access s | a part's set-up s (most) | set-up and tiles s | "
                "lists merge s | teardown s | release after the job s | a part's close s (most) | each GPU busy s | "
                "idle inside s | longest gap ms | backend s |")
TRACE_RULE = "|" + "---|" * 14


def trace_row(job, devices, text):
    """One table row from an OUTCORE_TRACE of one job: the phases' seconds ("-" where the trace
    has none), each device's busy and idle time inside the tiles phase, the longest gap before
    a tile, and the backend's whole time."""
    def one(pattern):
        m = re.search(pattern, text)
        return m.group(1) if m else "-"

    closes = [float(v) for v in re.findall(r"^outcore cuda: cuda:\d+(?:\.\d+)?\s+([0-9.]+) s$", text, re.M)]
    setups = [float(v) for v in re.findall(r"^outcore cuda:\d+(?:\.\d+)? setup: all\s+([0-9.]+) s$", text, re.M)]
    busy = re.findall(r"GPU busy ([0-9.]+) s of the span .*?\(idle inside ([0-9.]+) s\); longest gaps \(ms before tile\):"
                      r" ?([0-9.]*)", text)
    def span(vals):
        if not vals:
            return "-"
        return f"{min(vals):.3f}" if min(vals) == max(vals) else f"{min(vals):.3f}-{max(vals):.3f}"

    return (f"| {job} | {devices} | {one(r'outcore cuda: setup +([0-9.]+) s')} | "
            f"{one(r'outcore cuda: peer access +([0-9.]+) s')} | {f'{max(setups):.3f}' if setups else '-'} | "
            f"{one(r'outcore cuda: set-up and tiles +([0-9.]+) s')} | "
            f"{one(r'outcore cuda: lists merge +([0-9.]+) s')} | {one(r'outcore cuda: teardown +([0-9.]+) s')} | "
            f"{one(r'outcore cuda: release after the job +([0-9.]+) s')} | "
            f"{f'{max(closes):.3f}' if closes else '-'} | {span([float(b[0]) for b in busy])} | "
            f"{span([float(b[1]) for b in busy])} | {max((float(b[2]) for b in busy if b[2]), default=0):.1f} | "
            f"{one(r'outcore gram: backend +([0-9.]+) s')} |")


def part_strong(args, d):
    a = d / "strong.npy"
    n, m = args.strong_rows, args.strong_cols
    gen(args, a, n, m)
    lines = [f"### Strong scaling: A·Aᵀ of {n} x {m} bits (packed .npy, {a.stat().st_size / 1e9:.1f} GB in {d})", "",
             "| job | GPUs | panels | load s | job s | wall s | bit-MAC/s effective | efficiency | same bytes as 1 GPU | "
             "per device |", "|---|---|---|---|---|---|---|---|---|---|"]
    worst = None
    # Panels shared between the devices (the default) and, with --panel-exchange both, each
    # device staging every panel from the host itself (OUTCORE_PANEL_EXCHANGE=0).
    # --split-k adds rows with the first tiles split on K as OUTCORE_CUDA_SPLIT_K says ("0":
    # every tile whole; "default": the variable unset).
    exchange = {"on": ["shared"], "off": ["from host"], "both": ["shared", "from host"]}[args.panel_exchange]
    ways = [(pe, sk) for pe in exchange for sk in args.split_k.split(",")]
    for job in ("top-10", "threshold"):
        ext = JOBS[job][1]
        one = None
        for g in args.gpus:
            for pe, sk in (ways if g > 1 else ways[:1]):
                way = pe if sk == "default" else f"{pe}, split {sk}"
                env = dict(ENV, OUTCORE_PANEL_EXCHANGE="0" if pe == "from host" else "1")
                env.pop("OUTCORE_CUDA_SPLIT_K", None)
                if sk != "default":
                    env["OUTCORE_CUDA_SPLIT_K"] = sk
                out = d / f"strong_{job}_{g}_{way.replace(' ', '_').replace(',', '').replace(':', 'x')}.{ext}"
                wall, _, data = best_of(args, a, m, job, out, ["--backend", "cuda", "--algorithm", "dense",
                                                                 "--devices", spec(g, args.virtual)], env)
                rate = data["rate_effective"]
                if one is None:
                    one = (rate, out)
                eff = rate / ((1 if args.virtual else g) * one[0])  # virtual: the split's cost on one GPU
                if g == args.gpus[-1] and g > 1 and (pe, sk) == ways[0]:
                    worst = eff if worst is None else min(worst, eff)
                same = "reference" if out == one[1] else ("identical" if same_output(one[1], out) else "DIFFERENT")
                pairs = f" ({data['pairs']} pairs)" if "pairs" in data else ""
                lines.append(f"| {job}{pairs} | {spec(g, args.virtual)} | {way if g > 1 else '-'} | "
                             f"{data['load_seconds']:.3f} | {data['seconds']:.3f} | {wall:.3f} | {rate:.3g} | "
                             f"{100 * eff:.1f}% | {same} | {devices_cell(data)} |")
                if out != one[1]:
                    out.unlink(missing_ok=True)
                Path(str(out) + ".json").unlink(missing_ok=True)
        one[1].unlink(missing_ok=True)
    if args.trace:  # where the time goes on one device and on the most (OUTCORE_TRACE's phases, stderr)
        trace_lines = ["### Where the time goes (OUTCORE_TRACE, one run each)", "", TRACE_HEADER, TRACE_RULE]
        for job in ("top-10", "threshold"):
            for g in sorted({args.gpus[0], args.gpus[-1]}):
                out = d / "strong_trace.npz"
                cmd = [args.outcore, "gram", str(a), "--bits", str(m), *JOBS[job][0], "--backend", "cuda",
                       "--algorithm", "dense", "--devices", spec(g, args.virtual), "-o", str(out), "--quiet"]
                trace = subprocess.run(cmd, capture_output=True, text=True, env=dict(ENV, OUTCORE_TRACE="1"))
                raw = Path(args.trace_dir) / f"trace_{job}_{spec(g, args.virtual).replace(',', '-').replace(':', '_')}.txt"
                raw.parent.mkdir(parents=True, exist_ok=True)
                raw.write_text(trace.stderr)
                trace_lines.append(trace_row(f"{job} (exit {trace.returncode})", spec(g, args.virtual), trace.stderr))
                out.unlink(missing_ok=True)
        trace_lines.append(f"\n(each run's whole trace: {args.trace_dir}/trace_*.txt)")
        emit("\n".join(trace_lines) + "\n")
    if worst is not None:
        against = "the whole GPU" if args.virtual else f"{args.gpus[-1]} x one GPU"
        lines.append(f"\nefficiency at {args.gpus[-1]} devices against {against} (worst job): {100 * worst:.1f}% "
                     f"(target >= 90%)")
    emit("\n".join(lines) + "\n")


def part_mpi(args, d):
    a = d / "strong.npy"
    n, m = args.strong_rows, args.strong_cols
    mpiexec = shutil.which(args.mpiexec)
    version = subprocess.run([args.outcore, "--version"], capture_output=True, text=True).stdout
    if not mpiexec or "MPI:" not in version:
        emit(f"### MPI ranks: skipped ({'no ' + args.mpiexec if not mpiexec else 'outcore built without MPI'})\n")
        return
    gen(args, a, n, m)
    g = args.gpus[-1]
    lines = [f"### MPI: `{Path(mpiexec).name} -n {g}`, one rank per GPU, against one process on {g} GPUs "
             f"(A {n} x {m} bits)", "",
             "| job | run | wall s | bit-MAC/s effective (wall) | vs one process | bytes |", "|---|---|---|---|---|---|"]
    work = float(n) * n * m
    for job in ("top-10", "threshold"):
        flags, ext = JOBS[job]
        one = d / f"mpi_one.{ext}"
        wall1, _, _ = gram(args, a, m, job, one, ["--backend", "cuda", "--algorithm", "dense", "--devices", spec(g, args.virtual)])
        lines.append(f"| {job} | one process, --devices {spec(g, args.virtual)} | {wall1:.3f} | {work / wall1:.3g} | 1.00 | reference |")
        ranks = d / f"mpi_ranks.{ext}"
        # Each rank takes its own GPU (virtual: all share GPU 0, each with a share of its memory).
        device = "--device $MPI_LOCALRANKID" if not args.virtual else f"--gpu-mem {args.virtual_gpu_mem // g}G"
        inner = (f"exec {args.outcore} gram {a} --bits {m} {' '.join(flags)} --backend cuda --algorithm dense "
                 f"{device} -o {ranks} --quiet")
        wall, _, _ = run([mpiexec, "-n", str(g), "sh", "-c", inner])
        same = "identical" if same_output(one, ranks) else "DIFFERENT"
        lines.append(f"| {job} | {Path(mpiexec).name} -n {g} | {wall:.3f} | {work / wall:.3g} | {wall1 / wall:.2f} | {same} |")
        one.unlink()
        ranks.unlink(missing_ok=True)
    emit("\n".join(lines) + "\n")


def part_weak(args, d):
    for leftover in ("strong.npy", "small.npy"):  # room on the disk for the goal-size file
        (d / leftover).unlink(missing_ok=True)
    a = d / "weak.npy"
    n, m = args.weak_rows, args.weak_cols
    gen_s = gen(args, a, n, m)
    g = args.gpus[-1]
    out = d / "weak_top10.npz"
    extra = ["--backend", "cuda", "--algorithm", "dense", "--devices", spec(g, args.virtual), "--host-mem", args.host_mem]
    wall, rss, data = gram(args, a, m, "top-10", out, extra)
    devs = data.get("devices") or []
    lines = [f"### Weak scaling to the goal size: A·Aᵀ top-10 jaccard of {n} x {m} bits "
             f"({a.stat().st_size / 1e9:.0f} GB packed in {d}, generated in {gen_s:.0f} s), "
             f"--devices {spec(g, args.virtual)} --host-mem {args.host_mem}", "",
             f"- wall {wall:.1f} s (job {data['seconds']:.1f} s, {data['rate_effective']:.3g} bit-MAC/s effective, "
             f"{data['rate_computed']:.3g} computed), {data['tiles']} tiles",
             f"- host: peak resident {rss / 2**30:.1f} GiB (wait4), outcore's own peak "
             f"{data['host_peak_bytes'] / 2**30:.1f} GiB of a {data['host_budget_bytes'] / 2**30:.1f} GiB budget",
             f"- moved: {data['gpu']['bytes_h2d'] / 1e9:.1f} GB host to GPUs, {data['gpu']['bytes_d2h'] / 1e9:.2f} GB back",
             "", "| device | tiles | busy | busy fraction | H2D GB | D2H GB | peak GiB | budget GiB |",
             "|---|---|---|---|---|---|---|---|"]
    for x in devs:
        lines.append(f"| {x['name']} | {x['tiles']} | {x['busy_seconds']:.1f} s | {100 * x['busy_seconds'] / data['seconds']:.0f}% | "
                     f"{x['bytes_h2d'] / 1e9:.1f} | {x['bytes_d2h'] / 1e9:.2f} | {x['peak_bytes'] / 2**30:.1f} | "
                     f"{x['budget_bytes'] / 2**30:.1f} |")
    top = np.load(out)
    lines.append(f"\noutput: {', '.join(f'{k} {top[k].shape}' for k in top.files)}")
    emit("\n".join(lines) + "\n")
    out.unlink()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--outcore", default="build-gpu/outcore")
    ap.add_argument("--dir", default="/var/tmp/oc_scaling")
    ap.add_argument("--parts", default="identical,strong,mpi,weak")
    ap.add_argument("--gpus", default=None, help="device counts, e.g. 1,2,4 (default: 1, 2, 4 ... up to all)")
    ap.add_argument("--virtual", action="store_true", help="split GPU 0 into logical devices instead")
    ap.add_argument("--virtual-gpu-mem", type=int, default=60, help="GiB of GPU 0 shared by virtual MPI ranks")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--strong-rows", type=int, default=200000)
    ap.add_argument("--strong-cols", type=int, default=1000000)
    ap.add_argument("--weak-rows", type=int, default=1000000)
    ap.add_argument("--weak-cols", type=int, default=1000000)
    ap.add_argument("--host-mem", default="64G")
    ap.add_argument("--mpiexec", default="mpiexec")
    ap.add_argument("--panel-exchange", choices=("on", "off", "both"), default="on",
                    help="strong: panels shared between devices (on), each from the host (off), or both rows")
    ap.add_argument("--split-k", default="default",
                    help="OUTCORE_CUDA_SPLIT_K settings of the strong part's jobs on several GPUs, comma-separated "
                         "(default: unset; 0: every tile whole; PANELS:SLICES)")
    ap.add_argument("--trace", action="store_true",
                    help="strong: also trace both jobs on the fewest and the most devices (a table of phases; "
                         "each whole trace into --trace-dir)")
    ap.add_argument("--trace-dir", default=os.environ.get("OUT") or "/tmp/oc_scaling_traces",
                    help="where --trace writes each run's whole OUTCORE_TRACE (default: $OUT, else /tmp/oc_scaling_traces)")
    ap.add_argument("--keep", action="store_true", help="keep the generated inputs in --dir")
    ap.add_argument("--markdown", default=None, help="also write the tables to this file")
    args = ap.parse_args()
    listed = gpus(args.outcore)
    count = len(listed)
    if count == 0:
        print("bench_scaling: no usable GPU: skipped")
        return 0
    if args.gpus:
        args.gpus = [int(g) for g in args.gpus.split(",")]
    else:
        top = 4 if args.virtual else count
        args.gpus = [g for g in (1, 2, 4, 8) if g <= top]
    if not args.virtual and args.gpus[-1] > count:
        print(f"bench_scaling: {args.gpus[-1]} GPUs asked for, {count} present")
        return 1
    d = Path(args.dir)
    d.mkdir(parents=True, exist_ok=True)
    host = os.uname().nodename
    emit(f"## bench_scaling: {host}, {os.cpu_count()} cores, {count} x {listed[0].get('name', 'GPU')}"
         f"{' (virtual devices on GPU 0)' if args.virtual else ''}, {time.strftime('%Y-%m-%d')}; "
         f"inputs in {d} ({shutil.disk_usage(d).free / 1e9:.0f} GB free)\n")
    ok = True
    try:
        for part in args.parts.split(","):
            t0 = time.perf_counter()
            if part == "identical":
                ok &= part_identical(args, d)
            elif part == "strong":
                part_strong(args, d)
            elif part == "mpi":
                part_mpi(args, d)
            elif part == "weak":
                part_weak(args, d)
            else:
                print(f"bench_scaling: unknown part {part}")
                return 2
            print(f"({part}: {time.perf_counter() - t0:.0f} s)", flush=True)
    finally:
        if args.markdown:
            Path(args.markdown).write_text("\n".join(TABLES))
        if not args.keep:
            shutil.rmtree(d, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
