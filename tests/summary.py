#!/usr/bin/env python3
"""The one summary of `make test` (and `make test-fast`): every stage's passed, failed and
skipped counts, each skip's reason grouped with its count, and last the line
`N passed, N failed, N skipped` that CI and people read.

Each stage is run through this script, which records its outcome under the results folder:

    summary.py --results DIR ctest [--prefix TITLE] NAME BUILD [CTEST ARGS...]
        ctest over BUILD; one row per label (C unit tests, GPU tests, CLI tests, ...), each
        title after TITLE ("TSan: "; given before NAME, or ctest receives it). A pytest
        file under ctest counts its own tests (tests/CMakeLists.txt gives it --junitxml), so a
        file with skips is not one "passed".
    summary.py --results DIR pytest NAME TITLE [PYTEST ARGS...]
        pytest run directly; one row.
    summary.py --results DIR step NAME TITLE -- COMMAND...
        a command that is no test (a build): a failure when it exits nonzero. Exits with the
        command's status, so that what needs it can be skipped with &&.
    summary.py --results DIR fuzz NAME TITLE -- COMMAND...
        tests/fuzz/fuzz.sh regress: one test per fuzz target, read from its output.
    summary.py --results DIR report
        prints the table; exits 1 when a test failed or a stage did not finish.

The test stages exit 0 whatever their tests did: `make test` runs every stage, then the report.
"""
import argparse
import json
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

# ctest labels (tests/CMakeLists.txt), most specific first, and the row each gives.
LABEL_ROWS = [("gpu", "GPU tests"), ("install", "install tests"), ("python", "Python tests"),
              ("cli", "CLI tests"), ("unit", "C unit tests")]

# Skip reasons grouped by their fixed part; the first match names the group. A reason that
# matches none is grouped by its text before the first ": " (the variable detail follows it).
SKIP_GROUPS = [
    (r"a (GPU|CUDA device) is usable here", "a GPU is usable here (tests of the no-GPU path)"),
    (r"no usable (GPU|CUDA device)|needs a usable CUDA device|no CUDA device", "no usable GPU"),
    (r"without MPI|no mpirun|MPI", "no MPI"),
    (r"OUTCORE_LARGE_TESTS", "OUTCORE_LARGE_TESTS unset"),
    (r"nvcc is not (installed|available)", "no nvcc"),
    (r"libnvrtc is not installed|NVRTC", "no NVRTC"),
    (r"built without CUDA", "built without CUDA"),
    (r"numba", "no usable numba"),
    (r"no clang .*libFuzzer", "no clang that links libFuzzer"),
    (r"this CPU or OS does not support it", "a CPU kernel path this CPU lacks"),
]


def skip_group(reason):
    reason = " ".join(reason.split())
    for pattern, group in SKIP_GROUPS:
        if re.search(pattern, reason):
            return group
    return reason.split(": ", 1)[0] or "no reason given"


# ------------------------------------------------------------------ recording a stage

def record(results, name, **fields):
    """Writes the stage's record; records are read back in the order the stages ran."""
    results.mkdir(parents=True, exist_ok=True)
    order = len(list(results.glob("*.stage.json")))
    fields.update(name=name, order=order, seconds=round(time.time() - run.started, 1))
    (results / f"{name}.stage.json").write_text(json.dumps(fields))


def run(cmd, log=None):
    """Runs cmd with its output passed through (and copied to log); returns its exit status."""
    run.started = time.time()
    sys.stdout.flush()
    if log is None:
        return subprocess.call(cmd)
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        for line in proc.stdout:
            sys.stdout.buffer.write(line)
            sys.stdout.flush()
            out.write(line)
        return proc.wait()


def stage_ctest(results, name, build, args, prefix):
    build = Path(build).resolve()
    junit = (results / f"{name}.ctest.xml").resolve()
    start = time.time()
    listing = subprocess.run(["ctest", "--test-dir", str(build), "--show-only=json-v1", *args],
                             capture_output=True, text=True)
    labels = {}
    if listing.returncode == 0:
        for test in json.loads(listing.stdout).get("tests", []):
            props = {p["name"]: p["value"] for p in test.get("properties", [])}
            labels[test["name"]] = props.get("LABELS", [])
    rc = run(["ctest", "--test-dir", str(build), "--output-junit", str(junit),
              "--test-output-size-passed", "65536", *args])
    record(results, name, kind="ctest", rc=rc, start=start, build=str(build), junit=str(junit), labels=labels,
           prefix=prefix)
    return 0


def stage_pytest(results, name, title, args):
    junit = (results / f"{name}.pytest.xml").resolve()
    rc = run([sys.executable, "-m", "pytest", f"--junitxml={junit}", *args])
    record(results, name, kind="pytest", rc=rc, title=title, junit=str(junit))
    return 0


def stage_step(results, name, title, cmd):
    rc = run(cmd)
    record(results, name, kind="step", rc=rc, title=title)
    return rc


def stage_fuzz(results, name, title, cmd):
    log = (results / f"{name}.log").resolve()
    results.mkdir(parents=True, exist_ok=True)
    rc = run(cmd, log)
    record(results, name, kind="fuzz", rc=rc, title=title, log=str(log))
    return 0


# ------------------------------------------------------------------ reading the outcomes

class Row:
    def __init__(self, title):
        self.title = title
        self.passed = 0
        self.failed = []          # names of the failed tests
        self.skipped = []         # reasons

    def add(self, outcome, what):
        if outcome == "passed":
            self.passed += 1
        elif outcome == "failed":
            self.failed.append(what)
        else:
            self.skipped.append(what)


def pytest_cases(path):
    """(outcome, name or skip reason) of every test case of a pytest junit file."""
    for case in ET.parse(path).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        if case.find("failure") is not None or case.find("error") is not None:
            yield "failed", name
        elif (skip := case.find("skipped")) is not None:
            yield "skipped", skip.get("message") or (skip.text or "").strip() or "no reason given"
        else:
            yield "passed", name


SKIP_LINE = re.compile(r"^SKIPPED(?: (path \S+))?: (.*)")


def ctest_skip_reasons(output):
    """The harness's `SKIPPED: reason` lines (tests/harness.c) and the CPU path tests'
    `SKIPPED path avx512: reason`, in order."""
    reasons = []
    for line in output.splitlines():
        if m := SKIP_LINE.match(line):
            reasons.append(f"{m.group(1)}: {m.group(2)}" if m.group(1) else m.group(2))
    return reasons


def label_row(labels):
    for label, title in LABEL_ROWS:
        if label in labels:
            return title
    return "other tests"


def read_ctest(stage, rows, prefix):
    junit = Path(stage["junit"])
    if not junit.exists():
        row = rows.setdefault(prefix + "ctest", Row(prefix + "ctest"))
        row.add("failed", f"ctest exited {stage['rc']} without results")
        return
    pytest_dir = Path(stage["build"]) / "pytest-results"
    failed_before = sum(len(row.failed) for row in rows.values())
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = case.get("name")
        title = prefix + label_row(stage["labels"].get(name, []))
        row = rows.setdefault(title, Row(title))
        status = case.get("status")
        output = (case.findtext("system-out") or "")
        skip = case.find("skipped")
        pytest_file = pytest_dir / f"{name}.xml"
        if pytest_file.exists() and pytest_file.stat().st_mtime >= stage["start"]:
            cases = list(pytest_cases(pytest_file))
            for outcome, what in cases:
                row.add(outcome, what)
            # pytest itself failed (a collection error) with no failed case: the file failed.
            if status == "fail" and not any(outcome == "failed" for outcome, _ in cases):
                row.add("failed", name)
        elif status == "run":
            row.add("passed", name)
            for reason in ctest_skip_reasons(output):
                row.add("skipped", reason)
        elif status == "notrun" and skip is not None and skip.get("message", "").startswith("SKIP_"):
            reasons = ctest_skip_reasons(output)
            lines = [line for line in output.splitlines() if line.strip()]
            row.add("skipped", reasons[0] if reasons else (lines[-1] if lines else "no reason given"))
        else:
            row.add("failed", name)
    # ctest failed with no failed test to show for it (no test found under --no-tests=error).
    if stage["rc"] != 0 and sum(len(row.failed) for row in rows.values()) == failed_before:
        row = rows.setdefault(prefix + "ctest", Row(prefix + "ctest"))
        row.add("failed", f"ctest exited {stage['rc']}")


def read_stage(stage, rows):
    kind = stage["kind"]
    if kind == "ctest":
        read_ctest(stage, rows, stage.get("prefix", ""))
        return
    title = stage["title"]
    row = rows.setdefault(title, Row(title))
    if kind == "pytest":
        junit = Path(stage["junit"])
        cases = list(pytest_cases(junit)) if junit.exists() else []
        for outcome, what in cases:
            row.add(outcome, what)
        if stage["rc"] not in (0, 77) and not any(outcome == "failed" for outcome, _ in cases):
            row.add("failed", f"pytest exited {stage['rc']}")
    elif kind == "fuzz":
        text = Path(stage["log"]).read_text(errors="replace") if Path(stage["log"]).exists() else ""
        for line in text.splitlines():
            if m := re.match(r"fuzz: (fuzz_\w+): \d+ seeds pass", line):
                row.add("passed", m.group(1))
            elif m := re.match(r"fuzz: (fuzz_\w+) FAILED", line):
                row.add("failed", m.group(1))
            elif m := re.match(r"fuzz: SKIPPED (fuzz_\w+): (.*)", line):
                row.add("skipped", m.group(2))
        if stage["rc"] != 0 and not row.failed:
            row.add("failed", f"exited {stage['rc']}")
    elif kind == "step" and stage["rc"] != 0:
        row.add("failed", f"exited {stage['rc']}")


def report(results):
    stages = sorted((json.loads(p.read_text()) for p in results.glob("*.stage.json")), key=lambda s: s["order"])
    if not stages:
        print(f"no test results under {results}", file=sys.stderr)
        return 1
    rows = {}
    for stage in stages:
        read_stage(stage, rows)
    rows = [row for row in rows.values() if row.passed or row.failed or row.skipped]
    durations = ", ".join(f"{s['name']} {s['seconds']:.0f} s" for s in stages if "seconds" in s)
    width = max(len(row.title) for row in rows + [Row("stage")])
    print()
    print("=" * (width + 27))
    print(f"{'stage':<{width}}  {'passed':>7} {'failed':>7} {'skipped':>8}")
    for row in rows:
        print(f"{row.title:<{width}}  {row.passed:>7} {len(row.failed):>7} {len(row.skipped):>8}")
    failed = [(row.title, what) for row in rows for what in row.failed]
    if failed:
        print("\nfailed:")
        for title, what in failed:
            print(f"  {title}: {what}")
    groups = Counter(skip_group(reason) for row in rows for reason in row.skipped)
    if groups:
        print("\nskipped, by reason:")
        for group, count in sorted(groups.items(), key=lambda item: (-item[1], item[0])):
            print(f"  {group}: {count}")
    passed = sum(row.passed for row in rows)
    skipped = sum(len(row.skipped) for row in rows)
    print(f"\nstages' durations: {durations}")
    print("=" * (width + 27))
    print(f"{passed} passed, {len(failed)} failed, {skipped} skipped")
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", required=True, type=Path, help="the folder of the stages' records")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("ctest")
    p.add_argument("name")
    p.add_argument("build")
    p.add_argument("--prefix", default="", help="put before each row's title, e.g. 'TSan: '")
    p.add_argument("args", nargs=argparse.REMAINDER)
    p = sub.add_parser("pytest")
    p.add_argument("name")
    p.add_argument("title")
    p.add_argument("args", nargs=argparse.REMAINDER)
    for kind in ("step", "fuzz"):
        p = sub.add_parser(kind)
        p.add_argument("name")
        p.add_argument("title")
        p.add_argument("args", nargs=argparse.REMAINDER)
    sub.add_parser("report")
    opts = parser.parse_args()
    args = getattr(opts, "args", [])
    if args and args[0] == "--":
        args = args[1:]
    if opts.command == "ctest":
        return stage_ctest(opts.results, opts.name, opts.build, args, opts.prefix)
    if opts.command == "pytest":
        return stage_pytest(opts.results, opts.name, opts.title, args)
    if opts.command == "step":
        return stage_step(opts.results, opts.name, opts.title, args)
    if opts.command == "fuzz":
        return stage_fuzz(opts.results, opts.name, opts.title, args)
    return report(opts.results)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # Ctrl-C: the stage running got it too; no traceback of ours
        sys.stderr.write("\ninterrupted\n")
        sys.exit(130)
