"""docs/abi.md names every struct of include/outcore.h that begins with size_t struct_size, in its
list of them and in its version table, and no struct that does not."""
import re

from conftest import SOURCE_DIR

HEADER = SOURCE_DIR / "include" / "outcore.h"
ABI = SOURCE_DIR / "docs" / "abi.md"


def sized_structs():
    """The structs of outcore.h whose first field is size_t struct_size."""
    return set(re.findall(r"typedef struct (oc_\w+) \{\s*size_t struct_size;", HEADER.read_text()))


def listed_structs():
    """The structs of the sentence under "Option structs" that ends "begin with size_t struct_size"."""
    text = ABI.read_text()
    section = text.split("## Option structs", 1)[1]
    sentence = section.split("begin with `size_t struct_size`", 1)[0]
    return set(re.findall(r"`(oc_\w+)`", sentence))


def table_structs():
    """The structs of the version table's first column."""
    names = set()
    for line in ABI.read_text().splitlines():
        cells = line.split("|")
        if line.startswith("| `oc_") and len(cells) > 2:
            names.update(re.findall(r"`(oc_\w+)`", cells[1]))
    return names


def test_the_header_has_sized_structs():
    assert {"oc_read_options", "oc_write_options", "oc_gram_options"} <= sized_structs()


def test_the_list_names_every_sized_struct():
    assert listed_structs() == sized_structs()


def test_the_version_table_names_every_sized_struct():
    # oc_stream_array travels with oc_stream_spec (its array_struct_size), named in the same row.
    assert table_structs() - {"oc_stream_array"} == sized_structs()
