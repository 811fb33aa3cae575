"""Numbers in the library's text are the formats' own ('.' as the decimal point) whatever
locale the calling program set: Python's locale.setlocale(LC_ALL, "de_DE.UTF-8") made the
.tsv and .mtx writers put "0,699999988" (scipy read it as 0.0), the .mtx reader refuse
"1.0", and map read the literal 0.5 up to its point."""
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

I18N = Path("/usr/share/i18n/locales/de_DE")


@pytest.fixture(scope="module")
def comma_locale(tmp_path_factory):
    """A directory holding de_DE.UTF-8 (decimal comma), made with localedef."""
    localedef = shutil.which("localedef")
    if localedef is None or not I18N.exists():
        pytest.skip("no localedef or de_DE locale source to make a locale with a decimal comma")
    d = tmp_path_factory.mktemp("locale")
    r = subprocess.run([localedef, "-i", "de_DE", "-f", "UTF-8", str(d / "de_DE.UTF-8")], capture_output=True,
                       text=True)
    if not (d / "de_DE.UTF-8").exists():
        pytest.skip(f"localedef could not make de_DE.UTF-8: {r.stderr.strip()[:200]}")
    return d


def test_numbers_in_text_ignore_the_callers_locale(comma_locale, tmp_path):
    script = textwrap.dedent("""
        import json, locale, sys
        import numpy as np
        import outcore
        locale.setlocale(locale.LC_ALL, "de_DE.UTF-8")
        assert locale.localeconv()["decimal_point"] == ","
        out = sys.argv[1]
        a = np.zeros((3, 10), bool)
        a[0, :7] = a[1, :7] = True
        a[1, 7:] = True                      # rows 0 and 1: jaccard exactly 0.7
        outcore.gram(a, metric="jaccard", threshold=0.5, out=out + "/p.mtx")
        outcore.gram(a, metric="jaccard", threshold=0.5, out=out + "/p.tsv")
        with open(out + "/in.mtx", "w") as f:
            f.write("%%MatrixMarket matrix coordinate real general\\n2 3 2\\n1 1 1.0\\n2 3 1.0\\n")
        print(outcore.gram(out + "/in.mtx").tolist())
        print(float(outcore.map("0.5 * x", x=np.array([3.0]))[0]))
        print(json.dumps(outcore.devices()["cpu"]["cores"] > 0))
        print(json.dumps(outcore.explain(a, metric="jaccard", topk=1)))
    """)
    env = dict(os.environ, LOCPATH=str(comma_locale))
    r = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "[[1, 0], [0, 1]]", r.stdout
    assert r.stdout.splitlines()[1] == "1.5", r.stdout
    explain = r.stdout.splitlines()[3]
    assert not re.search(r"\d,\d", explain), explain  # the explain's rates and seconds too
    mtx = (tmp_path / "p.mtx").read_text()
    tsv = (tmp_path / "p.tsv").read_text()
    assert "0.699999988" in mtx and not re.search(r"\d,\d", mtx), mtx
    assert "0.699999988" in tsv and not re.search(r"\d,\d", tsv), tsv
    scipy_io = pytest.importorskip("scipy.io")
    m = scipy_io.mmread(str(tmp_path / "p.mtx"))
    assert abs(m.toarray()[0, 1] - 0.7) < 1e-6
