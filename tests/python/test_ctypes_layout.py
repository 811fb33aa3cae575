"""The binding's ctypes structs against the C header: every field at the offset and of the size
the compiler gives it (a C program built from include/outcore.h prints them), and every struct
with an ..._INIT macro starting from the library's own defaults."""
import ctypes
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from outcore import _lib, _tools

SOURCE_DIR = Path(os.environ.get("OUTCORE_SOURCE_DIR", Path(__file__).resolve().parents[2]))


def c_name(cls):
    """GramStats -> oc_gram_stats: the C name of a ctypes struct of the binding."""
    return getattr(cls, "_c_name", None) or "oc_" + re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__).lower()


def structs():
    found = {}
    for module in (_lib, _tools):
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, ctypes.Structure) and "_fields_" in vars(value):
                found[c_name(value)] = value
    return found


def test_every_struct_matches_the_header(tmp_path):
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    assert cc, "no C compiler: the layout check needs one"
    found = structs()
    assert len(found) >= 14, sorted(found)
    lines = []
    for name, cls in sorted(found.items()):
        lines.append(f'printf("{name} sizeof %zu\\n", sizeof({name}));')
        for field, _ in cls._fields_:
            lines.append(f'printf("{name} {field} %zu %zu\\n", offsetof({name}, {field}), '
                         f"sizeof((({name} *)0)->{field}));")
    program = tmp_path / "layout.c"
    program.write_text("#include <stddef.h>\n#include <stdio.h>\n#include \"outcore.h\"\nint main(void)\n{\n"
                       + "\n".join(lines) + "\nreturn 0;\n}\n")
    subprocess.run([cc, "-std=c11", "-I", str(SOURCE_DIR / "include"), str(program), "-o", str(tmp_path / "layout")],
                   check=True)
    printed = subprocess.run([str(tmp_path / "layout")], capture_output=True, text=True, check=True).stdout.split("\n")
    expected = []
    for name, cls in sorted(found.items()):
        expected.append(f"{name} sizeof {ctypes.sizeof(cls)}")
        for field, _ in cls._fields_:
            desc = getattr(cls, field)
            expected.append(f"{name} {field} {desc.offset} {desc.size}")
    assert printed[:-1] == expected


@pytest.mark.parametrize("name", ["oc_gram_options", "oc_output", "oc_read_options", "oc_stream_spec",
                                  "oc_stream_options", "oc_map_array", "oc_map_options", "oc_inspect_options",
                                  "oc_matmul_array", "oc_matmul_options"])
def test_defaults_come_from_the_library(name):
    cls = structs()[name]
    assert issubclass(cls, _lib._Defaults)
    value = cls()
    assert value.struct_size == ctypes.sizeof(cls)
    raw = (ctypes.c_char * ctypes.sizeof(cls))()
    assert _lib.lib.oc_struct_defaults(name.encode(), raw, ctypes.sizeof(cls)) == _lib.OC_OK
    assert bytes(raw) == bytes(value)
    # A size out of step with the library's is refused, not half copied.
    assert _lib.lib.oc_struct_defaults(name.encode(), raw, ctypes.sizeof(cls) - 8) != _lib.OC_OK
    assert _lib.lib.oc_struct_defaults(b"oc_no_such_struct", raw, ctypes.sizeof(cls)) != _lib.OC_OK
