"""scipy.sparse inputs of gram: checked before scipy touches them (its own routines trust
their arrays: an index past the shape wrote outside them, or crashed the process), read as
scipy reads them (duplicates summed), and handed to the library as CSR row lists."""
import numpy as np

from ._map import _CODES
from .errors import InputError


def is_sparse(x):
    # scipy.sparse without importing scipy: numpy is the binding's only dependency.
    return hasattr(x, "tocsr") and hasattr(x, "nnz") and hasattr(x, "shape")


# What a CSR matrix must have for the binding to read it (scipy.sparse's csr_matrix/csr_array).
_CSR_PARTS = ("data", "indices", "indptr", "shape", "copy", "sum_duplicates", "eliminate_zeros")


def _index_array(name, what, a, bound):
    """A sparse structure's index array, checked before scipy touches it (its own routines
    trust it: an index past the shape wrote outside their arrays, or crashed the process):
    integers from 0 to bound - 1."""
    a = np.asarray(a)
    if a.ndim != 1 or a.dtype.kind not in "iu":
        raise InputError(f"sparse {name}: {what} must be a 1-D array of integers, not {a.dtype} of shape {a.shape}")
    if a.size and (int(a.min()) < 0 or int(a.max()) >= bound):
        raise InputError(f"sparse {name}: {what} holds {int(a.min()) if int(a.min()) < 0 else int(a.max())}, "
                         f"outside 0..{bound - 1}")
    return a


def _check_compressed(name, x, major, minor):
    """indptr and indices of a CSR (major: rows) or CSC (major: columns) matrix: indptr of
    major + 1 entries from 0, never decreasing, to at most the entries stored; indices within
    the minor dimension."""
    indptr, indices, data = np.asarray(x.indptr), np.asarray(x.indices), np.asarray(x.data)
    if indptr.ndim != 1 or indptr.dtype.kind not in "iu" or len(indptr) != major + 1 or \
            (len(indptr) and (int(indptr[0]) != 0 or int(indptr[-1]) > min(len(indices), len(data)))) or \
            (len(indptr) > 1 and bool(np.any(np.diff(indptr.astype(np.int64)) < 0))):
        raise InputError(f"sparse {name}: indptr ({len(indptr)} entries), indices ({len(indices)}) and data "
                         f"({len(data)}) do not make a compressed matrix of {major} rows or columns")
    _index_array(name, "indices", indices[:int(indptr[-1]) if len(indptr) else 0], minor)


def _check_structure(name, x, shape):
    """The structure of a scipy.sparse matrix, before any of its conversions runs: its shape
    2-D, and for CSR, CSC, BSR and COO (whose arrays a caller may have edited) every index within
    the shape and every pointer in order; BSR's block pointers too. Other formats hold Python
    objects scipy checks."""
    if len(shape) != 2:
        raise InputError(f"sparse {name} has shape {tuple(shape)}; a matrix is 2-D (rows x columns)")
    rows, cols = (int(v) for v in shape)
    fmt = getattr(x, "format", None)
    if fmt == "csr" and hasattr(x, "indptr"):
        _check_compressed(name, x, rows, cols)
    elif fmt == "csc" and hasattr(x, "indptr"):
        _check_compressed(name, x, cols, rows)
    elif fmt == "bsr" and hasattr(x, "indptr") and hasattr(x, "blocksize"):
        br, bc = (int(v) for v in x.blocksize)
        if br < 1 or bc < 1 or rows % br or cols % bc:
            raise InputError(f"sparse {name}: blocks of {br} x {bc} do not tile a {rows} x {cols} matrix")
        _check_compressed(name, x, rows // br, cols // bc)
    elif fmt == "coo" and hasattr(x, "row") and hasattr(x, "col"):
        r, c = _index_array(name, "row", x.row, rows), _index_array(name, "col", x.col, cols)
        if len(r) != len(c) or len(r) != len(np.asarray(x.data)):
            raise InputError(f"sparse {name}: row ({len(r)}), col ({len(c)}) and data ({len(np.asarray(x.data))}) "
                             "differ in length")


def _canonical(csr):
    """Whether every row's column indices are strictly increasing (no duplicate), checked
    here rather than taken from scipy's has_canonical_format, which edits of the arrays leave
    stale."""
    indptr, indices = np.asarray(csr.indptr), np.asarray(csr.indices)[:int(csr.indptr[-1])]
    if indices.size < 2:
        return True
    rising = np.diff(indices.astype(np.int64)) > 0
    starts = indptr[1:-1].astype(np.int64) - 1  # the step into each row but the first is not compared
    starts = starts[(starts >= 0) & (starts < rising.size)]
    rising[starts] = True
    return bool(rising.all())


def _csr(x, name):
    """x.tocsr() checked to be a scipy CSR matrix, with duplicate entries summed as scipy reads
    them (a copy then: the caller's matrix is left as it was), so that two 1s at one place
    are the value 2, refused without binarize as the same matrix in COO or dense form is."""
    what = type(x).__name__
    _check_structure(name, x, tuple(getattr(x, "shape", ())))
    try:
        dtype = np.dtype(x.dtype)
    except (AttributeError, TypeError):
        dtype = np.asarray(getattr(x, "data", np.zeros(0))).dtype
    if dtype.newbyteorder("=") not in _CODES:  # the dtypes of arrays: bool, integers, float32, float64
        raise InputError(f"sparse {name} holds {dtype} values: expected bool, integers, float32 or float64 "
                         "(as for arrays)")
    try:
        csr = x.tocsr()
    except (AttributeError, TypeError, ValueError, RuntimeError, IndexError) as exc:  # not scipy's, or malformed
        raise InputError(f"{name}: {what} has tocsr, nnz and shape but is no usable scipy.sparse matrix "
                         f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})") from None
    missing = [part for part in _CSR_PARTS if not hasattr(csr, part)]
    if missing:
        raise InputError(f"{name}: {what} has tocsr, nnz and shape but is no scipy.sparse matrix: its tocsr() "
                         f"lacks {', '.join(missing)}")
    _check_structure(name, csr, tuple(csr.shape))
    if not _canonical(csr):  # duplicates possible (or unsorted rows)
        csr = csr.copy() if csr is x else csr
        csr.sum_duplicates()
    return csr


def sparse_rows(x, name, binarize):
    """(indptr, indices, shape) of x as int64 CSR row lists: its values 0 and 1 (any nonzero
    with binarize; NaN never), stored zeros dropped; the caller's matrix left as it was."""
    csr = _csr(x, name)
    if 0 in csr.shape:
        raise InputError(f"sparse {name} has shape {csr.shape}: a matrix needs at least one row and one column")
    data = np.asarray(csr.data)
    if not binarize and np.any((data != 0) & (data != 1)):
        bad = int(np.flatnonzero((data != 0) & (data != 1))[0])
        row = int(np.searchsorted(csr.indptr, bad, side="right") - 1)
        raise InputError(f"sparse {name}: value {data[bad]} at row {row}, column {csr.indices[bad]} is not 0 or 1 "
                         "(rows and columns count from 0; binarize=True reads any nonzero value as 1)")
    if binarize and data.dtype.kind == "f" and np.isnan(data).any():
        raise InputError(f"sparse {name} holds NaN, which is neither zero nor nonzero")
    if np.any(data == 0):
        csr = csr.copy() if csr is x else csr
        csr.eliminate_zeros()  # a stored zero is not a one
    indptr = np.ascontiguousarray(csr.indptr, dtype=np.int64)
    indices = np.ascontiguousarray(csr.indices, dtype=np.int64)
    return indptr, indices, tuple(int(v) for v in csr.shape)
