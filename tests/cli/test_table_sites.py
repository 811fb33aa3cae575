"""A pretend metric, map function, reduction and output format, compiled into the library's
sources: every site either handles a new name through its table or fails to compile, naming it;
and no other file writes the reductions, matmul's result dtypes or the backends as a list.

The public header takes no part in it: OC_METRIC_PRETEND (in oc_metric), OC_FORMAT_PRETEND (in
oc_output_format) and OC_MAP_REDUCE_PRETEND (in oc_map_reduce) are written before their enum's
count into a copy of include/outcore.h that the compiles find first. -DOC_TEST_PRETEND_METRIC
adds the pretend metric's row to the metric table (src/core/names.c);
-DOC_TEST_PRETEND_MAP_FUNCTION adds MOP_PRETEND (a private enum, src/map/map_expr.h) with a row
in src/map/map_ops.c; -DOC_TEST_PRETEND_FORMAT adds the pretend format's row to
src/io/formats/output_format.c; -DOC_TEST_PRETEND_REDUCE adds the pretend reduction's name to
src/map/map_plan.c; -DOC_TEST_PRETEND_WITHOUT_ROW leaves the rows out. Each file is only
compiled (-fsyntax-only), so the test costs a few compiler runs, not a build. Tables indexed by
a private enum (the fault plan's variables, map's types, the GEMM rates) are compiled once
more from a copy without a row, which their _Static_assert refuses.
"""
import os
import re
import shutil
import subprocess

import pytest

from conftest import SOURCE_DIR, run

CC = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
if CC is None:
    pytest.skip("no C compiler", allow_module_level=True)

# Where a metric's formula is chosen by a switch over oc_metric, and the file compiled to
# reach it (a header through a source that includes it).
METRIC_SWITCHES = {
    "src/gram/cpu/gram_cpu.c": "src/gram/cpu/gram_cpu.c",
    "src/gram/gram_choice.c": "src/gram/gram_choice.c",
    "src/gram/cpu/sparse/sparse_row_state.h": "src/gram/cpu/sparse/sparse_rows.c",
}
# Files that read the table: a new metric compiles there unchanged.
METRIC_TABLE_READERS = ["src/core/names.c", "src/gram/gram.c", "src/gram/select/select.c", "src/gram/cost_gram.c",
                        "src/gram/cpu/sparse/gram_sparse.c"]
MAP_SWITCHES = {"src/map/map_codegen.c": "src/map/map_codegen.c"}
# The output formats have no switch: every check of a suffix and the CLI read the table.
FORMAT_TABLE_READERS = ["src/io/formats/output_format.c", "src/io/formats/select_out.c", "src/gram/gram.c",
                        "tools/cmd_gram.c", "tools/cli/cli_names.c"]
MAP_TABLE_READERS = ["src/map/map_ops.c", "src/map/map_parse.c", "src/map/map_typecheck.c", "src/map/map_choice.c"]
# The reductions have no switch over their names: the plan, --explain and the CLI read the table.
REDUCE_TABLE_READERS = ["src/map/map_plan.c", "src/map/map_explain.c", "tools/cli/cli_names.c", "tools/cmd_map.c"]


# The public enums a pretend name joins: its define, the enum's count and the pretend value
# written before it in the copy of include/outcore.h (public_header_with).
PUBLIC_PRETEND = {"OC_TEST_PRETEND_METRIC": ("OC_METRIC_COUNT", "OC_METRIC_PRETEND"),
                  "OC_TEST_PRETEND_FORMAT": ("OC_OUTPUT_FORMAT_COUNT", "OC_FORMAT_PRETEND"),
                  "OC_TEST_PRETEND_REDUCE": ("OC_MAP_REDUCE_COUNT", "OC_MAP_REDUCE_PRETEND")}


def public_header_with(define):
    """The text of include/outcore.h with define's pretend value inserted just before its
    enum's count, so the count grows by one as it would for a real new name."""
    count, value = PUBLIC_PRETEND[define]
    text = (SOURCE_DIR / "include" / "outcore.h").read_text()
    patched, found = re.subn(rf"^([ \t]*){count}\b", rf"\g<1>{value},\n\g<1>{count}", text, flags=re.M)
    assert found == 1, f"include/outcore.h: the enum member {count} was expected once at a line's start"
    return patched


@pytest.fixture(scope="module")
def pretend_include(tmp_path_factory):
    """For each define of PUBLIC_PRETEND, a folder holding its copy of outcore.h."""
    folders = {}
    for define in PUBLIC_PRETEND:
        folder = tmp_path_factory.mktemp(define.lower())
        (folder / "outcore.h").write_text(public_header_with(define))
        folders[define] = folder
    return folders


def compile_unit(path, *defines, switch_enum=False, pretend_include=None):
    """(exit status, diagnostics) of compiling one file of the library, a switch without a case
    for an enum value (-Wswitch; with switch_enum, also one with a default) an error. A define
    of PUBLIC_PRETEND also puts its copy of outcore.h (pretend_include) ahead of include/. A
    file of the CLI finds its shared parts from tools/ ("cli/cli.h"), as the build has it."""
    first = [f"-I{pretend_include[d]}" for d in defines if d in PUBLIC_PRETEND]
    proc = subprocess.run([CC, "-std=gnu11", "-D_GNU_SOURCE", *first, f"-I{SOURCE_DIR / 'include'}",
                           f"-I{SOURCE_DIR / 'src'}", f"-I{SOURCE_DIR / 'tools'}", "-fsyntax-only", "-Werror=switch",
                           *(["-Werror=switch-enum"] if switch_enum else []), *[f"-D{d}" for d in defines],
                           str(SOURCE_DIR / path)], capture_output=True, text=True)
    return proc.returncode, proc.stderr


def files_with(pattern, folder="src"):
    """The files of a folder (C, CUDA and Python) whose text matches pattern, by path from the
    source dir."""
    found = set()
    for path in (SOURCE_DIR / folder).rglob("*"):
        if path.suffix in {".c", ".h", ".cu", ".cuh", ".py"} and re.search(pattern, path.read_text(errors="replace")):
            found.add(str(path.relative_to(SOURCE_DIR)))
    return found


def test_every_metric_switch_is_listed():
    # A switch over oc_metric outside the list would escape the check below.
    cases = files_with(r"case OC_METRIC_(COUNTS|JACCARD|COSINE|HAMMING)\b")
    cuda = {f for f in cases if "/cuda/" in f}
    assert cases - cuda == set(METRIC_SWITCHES)
    # Device code gets no -Wswitch-enum: its switches live in one header, which stops the
    # build with a static_assert on the metric count until they are extended.
    assert cuda == {"src/gram/cuda/gram_epilogue.cuh"}
    text = (SOURCE_DIR / "src/gram/cuda/gram_epilogue.cuh").read_text()
    counted = re.search(r"static_assert\(OC_METRIC_COUNT == (\d+)", text)
    assert counted and int(counted.group(1)) == len(run("--list", "metrics").stdout.split())


def test_every_map_op_switch_is_listed():
    # Switches without a default over oc_map_op (with a case for a math function).
    cases = files_with(r"case MOP_(SQRT|TANH|ARCTAN2):")
    assert cases == set(MAP_SWITCHES)


def test_output_suffixes_are_read_from_the_table():
    # The suffixes of the top-k and threshold formats are written once, in the table; the
    # CLI, its completion and the binding ask the library.
    written = files_with(r'"(npz|tsv)"') | files_with(r'"(npz|tsv)"', "tools") | files_with(r'"(npz|tsv)"', "python")
    assert written == {"src/io/formats/output_format.c"}
    completion = (SOURCE_DIR / "tools/completion/outcore.bash").read_text()
    assert not re.search(r"\b(npz|tsv)\b", completion)


def code_with(pattern, folders=("src", "tools", "python")):
    """The files of the folders (C, CUDA, Python, bash) whose code, comments and Python's
    docstrings left out, matches pattern, by path from the source dir."""
    found = set()
    for folder in folders:
        for path in (SOURCE_DIR / folder).rglob("*"):
            if path.suffix not in {".c", ".h", ".cu", ".cuh", ".py", ".bash"}:
                continue
            text = path.read_text(errors="replace")
            if path.suffix in {".py", ".bash"}:
                text = re.sub(r'"""(.|\n)*?"""|^\s*#.*$', "", text, flags=re.M)
            else:
                text = re.sub(r"/\*(.|\n)*?\*/", "", text)
            if re.search(pattern, text):
                found.add(str(path.relative_to(SOURCE_DIR)))
    return found


# Two of the reductions' names written in a row, or matmul's result dtypes float16 and int32
# (bfloat16 between them or not): a list of them.
REDUCTIONS = r"(sum|mean|min|max)"
REDUCTION_LIST = rf'"{REDUCTIONS}"[^"\n]{{0,40}}"{REDUCTIONS}"|\b{REDUCTIONS}(\||, | or | ){REDUCTIONS}\b'
MATMUL_RESULT_LIST = r"float16\W+(bfloat16\W+(\(ml_dtypes\)\W+)?)?int32"


def test_reductions_are_read_from_the_table():
    # src/map/map_plan.c holds them; the type hint's literal (python/outcore/_types.py) is
    # compared with the library's list by tests/python/test_name_lists.py.
    assert code_with(REDUCTION_LIST) == {"src/map/map_plan.c", "python/outcore/_types.py"}


def test_matmul_result_dtypes_are_read_from_the_table():
    # The table (src/matmul/matmul_dtype.c) says which dtypes a product is computed in; --dtype,
    # its help, its completion and the binding's messages read it.
    assert code_with(MATMUL_RESULT_LIST) == set()


def test_backends_are_read_from_the_library():
    # As names(lib.oc_backend_name) or parse_backend, never as a copy with the codes.
    assert code_with(r'"(auto|cpu|cuda)"\s*:\s*\d') == set()
    assert code_with(r"MATMUL_DTYPES\s*=\s*\[") == set()


# Per pretend name: its define, its enum value, its switches, the files reading its table,
# and the table file with the message of its _Static_assert.
PRETEND = {
    "metric": ("OC_TEST_PRETEND_METRIC", "OC_METRIC_PRETEND", METRIC_SWITCHES, METRIC_TABLE_READERS,
               "src/core/names.c", "metrics[] needs one row per oc_metric"),
    "map": ("OC_TEST_PRETEND_MAP_FUNCTION", "MOP_PRETEND", MAP_SWITCHES, MAP_TABLE_READERS,
            "src/map/map_ops.c", "ops[] needs one row per oc_map_op"),
    "format": ("OC_TEST_PRETEND_FORMAT", "OC_FORMAT_PRETEND", {}, FORMAT_TABLE_READERS,
               "src/io/formats/output_format.c", "formats[] needs one row per oc_output_format"),
    "reduction": ("OC_TEST_PRETEND_REDUCE", "OC_MAP_REDUCE_PRETEND", {}, REDUCE_TABLE_READERS,
                  "src/map/map_plan.c", "reduce_names[] needs one row per oc_map_reduce"),
}


@pytest.mark.parametrize("kind,site,unit", [(kind, site, unit) for kind, p in PRETEND.items()
                                            for site, unit in sorted(p[2].items())])
def test_a_new_name_stops_each_switch(kind, site, unit, pretend_include):
    # The metric switches build with -Wswitch-enum (CMakeLists.txt); map_codegen.c has
    # switches over other enums with a default, so its check is -Wswitch's.
    define, value = PRETEND[kind][:2]
    status, out = compile_unit(unit, switch_enum=kind == "metric")
    assert status == 0, out
    status, out = compile_unit(unit, define, switch_enum=kind == "metric", pretend_include=pretend_include)
    assert status != 0
    assert re.search(rf"{re.escape(site)}:\d+:\d+: error: enumeration value .{value}. not handled", out), out


@pytest.mark.parametrize("kind,unit", [(kind, unit) for kind, p in PRETEND.items() for unit in p[3]])
def test_a_new_name_compiles_where_the_table_is_read(kind, unit, pretend_include):
    status, out = compile_unit(unit, PRETEND[kind][0], pretend_include=pretend_include)
    assert status == 0, out


@pytest.mark.parametrize("kind", PRETEND)
def test_a_name_without_its_row_stops_the_table(kind, pretend_include):
    define, _, _, _, table, message = PRETEND[kind]
    status, out = compile_unit(table, define, "OC_TEST_PRETEND_WITHOUT_ROW", pretend_include=pretend_include)
    assert status != 0 and message in out, out


def test_the_public_header_has_no_test_hooks():
    # A user's program that happens to define one of the test macros gets the same header:
    # the preprocessed text of outcore.h is the same with every one of them defined.
    defines = [f"-D{p[0]}" for p in PRETEND.values()] + ["-DOC_TEST_PRETEND_WITHOUT_ROW"]

    def preprocessed(*extra):
        proc = subprocess.run([CC, "-E", "-P", "-x", "c", *extra, str(SOURCE_DIR / "include" / "outcore.h")],
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    assert preprocessed(*defines) == preprocessed()
    assert "OC_TEST_" not in (SOURCE_DIR / "include" / "outcore.h").read_text()


# Tables indexed by an enum of their own, with a row (a regex over the file's text) whose loss
# must stop the build, and the message of the table's _Static_assert.
ROWS = [("src/core/fault.c", r"\n\s*\[OC_FAULT_SHRINK\] = [^\n]*", "variables[] needs one row per oc_fault_call"),
        ("src/map/map_types.c", r"\n\s*\[MT_F64\] = [^\n]*", "mt_info[] needs one row per map type"),
        ("src/cost/cost_gemm.c", r',\s*\[OC_COST_GEMM_INT8\] = "int8"', "names[] needs one row per GEMM type"),
        ("src/cost/cost_gemm.c", r",\s*\[OC_COST_GEMM_INT8\] = 1400e12", "hopper[] needs one rate per GEMM type")]


@pytest.mark.parametrize("path,row,message", ROWS)
def test_a_table_without_a_row_stops_the_build(tmp_path, path, row, message):
    # A copy of the file without the row: zero-filled, it would compile (a NULL name, a rate 0).
    text = (SOURCE_DIR / path).read_text()
    short, found = re.subn(row, "", text)
    assert found == 1, f"{path}: the row {row!r} was expected once"
    copy = tmp_path / os.path.basename(path)
    copy.write_text(short)
    status, out = compile_unit(path)
    assert status == 0, out
    status, out = compile_unit(copy)
    assert status != 0 and message in out, out
