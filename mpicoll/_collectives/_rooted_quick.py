"""[2] The quick paths of gather and scatter, and broadcast's table."""

from __future__ import annotations

from typing import Any

from .. import _core_loader, _departed
from . import _rooted_direct
from ._call import quick, quick_array
from ._direct import run_kept
from ._layout import apart, area, layout
from ._sizes import rooted as rooted_sizes
from ._table import Table

# the quick paths of gather's and scatter's non-root ranks: (numpy dtype, group rank of the
# root, gathering) -> (MPI datatype, root, gathering), stored by the general path (plain
# dtypes)
QUICK_OFF_ROOT: dict[tuple, tuple[Any, int, bool]] = Table()

# broadcast's quick path: (numpy dtype, group rank of the root) -> (MPI datatype, root),
# stored by the general path (plain dtypes); the compiled core reads it too (core.bcast)
BROADCASTS: dict[tuple, tuple[Any, int]] = Table()

# the roots' quick paths of gather and scatter: (dtype, size of the tensor, root, sizes of
# the list) -> (counts and displacements, MPI datatype), stored by the general path
_QUICK_GATHER: dict[tuple, tuple[Any, Any]] = Table()
_QUICK_SCATTER: dict[tuple, tuple[Any, Any]] = Table()


def quick_rooted(name: str, pg: Any, root: int, tensor: Any, tensors: Any,
                 gathering: bool) -> bool:
    """gather's (``gathering``) or scatter's quick path: a plain dtype seen before; on the
    root, a list of adjacent views of sizes an earlier call of the general path
    validated (written by gather, read by scatter; ``tensor`` the other way round).
    True when done; False: take the general path."""
    a = quick_array(tensor, not gathering)
    if a is None:
        return False
    direct = pg.direct is not None
    core = _core_loader.module
    if pg._rank != root:
        hit = QUICK_OFF_ROOT.get((a.dtype, root, gathering)) if not tensors else None
        if hit is None:
            return False
        if direct:
            if core is None or _departed.left or not run_kept(core, name, pg, hit, a, None,
                                                              tensor):
                _rooted_direct.quick(name, pg, root, gathering, a, hit, None, tensor)
            return True
        mine, theirs = (a, hit[0]), None
    else:
        # adjacent views, or separate tensors where the messages are direct (each to or
        # from its own tensor's memory), of sizes the general path validated
        q = layout(tensors, pg._size, gathering)
        if q is None or q[1] != a.dtype or not (q[7] or direct):
            return False
        hit = (_QUICK_GATHER if gathering else _QUICK_SCATTER).get(
            (a.dtype, a.size, root, *q[4]))
        if hit is None:
            return False
        if direct and q[7] and core is not None and not _departed.left and run_kept(
                core, name, pg, hit, a, q[2], (tensor, tensors)):
            return True  # (its kept Plan, made where the list and the tensor lay apart)
        if not apart(q, a):
            return False
        if direct:  # (kept by the Work an interrupt leaves: a may own none)
            _rooted_direct.quick(name, pg, root, gathering, a, hit, q, (tensor, tuple(tensors)))
            return True
        mine, theirs = (a, hit[1]), (area(q), *hit)
    args = (mine, theirs, root) if gathering else (theirs, mine, root)
    sizes = rooted_sizes(name, pg, root, gathering, a.size,
                         None if theirs is None else q[4])
    if gathering:
        quick(name, pg, "Igatherv", args, sizes)
    else:
        quick(name, pg, "Iscatterv", args, sizes)
    return True
