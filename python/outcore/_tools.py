"""outcore.devices() and outcore.inspect(): the CLI's `--json` reports as plain dicts.

The C API does not declare these reports yet (include/outcore.h has no oc_devices_* or
oc_inspect_* functions), so both run the `outcore` command with --json and parse its output.
The command is found at $OUTCORE_BIN, next to the library in the build tree, or on PATH.
"""
import json
import os
import shutil
import subprocess
from pathlib import Path

from . import _lib
from .errors import Error, InputError

_USAGE_EXIT = 2  # the CLI's exit status for bad arguments and bad input


def _cli():
    env = os.environ.get("OUTCORE_BIN")
    if env:
        if not Path(env).exists():
            raise Error(f"OUTCORE_BIN={env} does not exist")
        return env
    beside = Path(_lib.library_path).resolve().parent / "outcore"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("outcore")
    if found:
        return found
    raise Error(f"the outcore command was not found (not next to {_lib.library_path}, not on PATH): "
                "set OUTCORE_BIN to it")


def _run_json(args):
    cmd = [_cli(), *args, "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    message = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
    if proc.returncode == _USAGE_EXIT:
        raise InputError(message)
    if proc.returncode != 0:
        raise Error(f"{' '.join(cmd)}: {message}")
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise Error(f"{' '.join(cmd)} did not print one JSON document: {proc.stdout[:200]!r}") from None


def devices():
    """The GPUs (name, compute capability, memory, limits) and the CPU, as `outcore devices
    --json` reports them."""
    return _run_json(["devices"])


def inspect(path, block=None, arch=None):
    """Registers, shared memory and launch limits of every kernel in a .ptx/.cubin/fatbinary
    file, as `outcore inspect --json` reports them; block=N adds the fit verdict for N
    threads per block, arch="sm_90" the target when no GPU is present."""
    args = ["inspect", os.fsdecode(path)]
    if block is not None:
        args += ["--block", str(int(block))]
    if arch is not None:
        args += ["--arch", str(arch)]
    return _run_json(args)
