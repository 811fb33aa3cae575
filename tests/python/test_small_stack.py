"""A process's first calls on a thread of 64 KiB of stack (threading.stack_size's smallest
useful size; docs/python.md: any thread, whatever its stack). The first call of a process
reads the rate cache and sets up the library's state, so it runs in a child process of its
own."""
import os
import subprocess
import sys

CHILD = r"""
import threading
import numpy as np
import outcore

results = []

def work():
    a = (np.arange(40 * 70).reshape(40, 70) % 3 == 0)
    results.append(outcore.gram(a).sum())
    results.append(outcore.map("x * 2 + 1", x=np.arange(5.0)).tolist())
    results.append(outcore.matmul(np.ones((3, 4)), np.ones((4, 2))).tolist())
    try:
        outcore.gram(np.ones((2, 3), np.uint8), np.ones((2, 4), np.uint8))
    except outcore.InputError as exc:
        results.append(str(exc))

threading.stack_size(64 * 1024)
t = threading.Thread(target=work)
t.start()
t.join()
a = (np.arange(40 * 70).reshape(40, 70) % 3 == 0).astype(np.int64)
assert results[0] == (a @ a.T).sum(), results
assert results[1] == [1.0, 3.0, 5.0, 7.0, 9.0], results
assert results[2] == [[4.0, 4.0]] * 3, results
assert "columns" in results[3], results
print("ok")
"""


def test_first_calls_on_a_64_kib_thread(tmp_path):
    cache = tmp_path / "rates.txt"  # read and written from the small thread: a copy of the tests' one
    src = os.environ.get("OUTCORE_COST_CACHE")
    if src and os.path.exists(src):
        cache.write_bytes(open(src, "rb").read())
    env = dict(os.environ, OUTCORE_COST_CACHE=str(cache),
               PYTHONPATH=os.pathsep.join(os.path.abspath(p) for p in sys.path if p))
    proc = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", (proc.returncode, proc.stderr[-2000:])
