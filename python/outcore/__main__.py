"""python -m outcore: the outcore command line, run from the executable installed in the
package (outcore/bin/outcore), so it has every command and option of `outcore --help`.

The process is replaced by the CLI (exec), so its exit status, output and Ctrl-C handling are
the CLI's own. $OUTCORE_BIN names another executable; from a checkout, build/outcore is used.
"""
import os
import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent


def cli_path():
    env = os.environ.get("OUTCORE_BIN")
    if env:
        return Path(env)
    for candidate in (_HERE / "bin" / "outcore", _HERE.parent.parent / "build" / "outcore"):
        if candidate.is_file():
            return candidate
    sys.exit(f"outcore: the outcore executable is not installed in the package ({_HERE / 'bin'}) "
             "and no build tree was found; reinstall with `pip install ./python`, or set OUTCORE_BIN")


def main():
    path = cli_path()
    try:
        os.execv(path, [str(path), *sys.argv[1:]])
    except OSError as exc:
        sys.exit(f"outcore: cannot run {path}: {exc.strerror}")


if __name__ == "__main__":
    main()
