"""[2] The quick paths of gather and scatter, and broadcast's table."""

from __future__ import annotations

from typing import Any

from .. import _core_loader, _departed, _polling
from .._adapter.views import QUICKERS
from . import _rooted_direct, _validate
from ._call import core_failed, quick, quick_allowed, quick_array
from ._direct import settled
from ._entries import Broadcast, OffRoot, RootList
from ._layout import apart, area, layout
from ._table import Table

# the quick paths of gather's and scatter's non-root ranks: (numpy dtype, group rank of the
# root, gathering, size of the tensor) -> OffRoot, stored by the general path (plain
# dtypes)
QUICK_OFF_ROOT: dict[tuple, OffRoot] = Table()

# broadcast's quick path: (numpy dtype, group rank of the root) -> Broadcast, stored by
# the general path (plain dtypes); the compiled core reads it too (core.bcast)
BROADCASTS: dict[tuple, Broadcast] = Table()

# the roots' quick paths of gather and scatter: (dtype, size of the tensor, root, sizes of
# the list) -> RootList, stored by the general path
_QUICK_GATHER: dict[tuple, RootList] = Table()
_QUICK_SCATTER: dict[tuple, RootList] = Table()


def quick_rooted(name: str, pg: Any, rank: Any, group_rank: Any, tensor: Any, tensors: Any,
                 gathering: bool) -> bool:
    """gather's (``gathering``) or scatter's quick path: a plain dtype seen before; on the
    root (the group rank that ``rank``, global, or ``group_rank`` names: dst and group_dst,
    or src and group_src), a list of adjacent views of sizes an earlier call of the
    general path validated (written by gather, read by scatter; ``tensor`` the other way
    round). True when done; False: take the general path (which also words a root named
    wrong)."""
    names = ("dst", "group_dst") if gathering else ("src", "group_src")
    core = _core_loader.module
    if core is not None:  # (the root, the lookup, and a kept Plan's run, in C: core.rooted)
        if not quick_allowed():
            return False
        found = core.rooted(name, pg, tensor, tensors, rank, group_rank, gathering,
                            QUICK_OFF_ROOT, _QUICK_GATHER if gathering else _QUICK_SCATTER,
                            QUICKERS, len(_polling.spin), _departed.left)
        if found is True or found is False:
            return found
        root = _validate.root(pg, name, rank, group_rank, *names)
        if len(found) == 5:  # (the Plan's run did not finish)
            settled(core, name, pg, *found, tensor if pg._rank != root else
                    (tensor, tensors))
            return True
        if len(found) == 4:  # (MPI's Gatherv or Scatterv, made in the core, did not complete)
            core_failed(name, pg, *found, tensor if pg._rank != root else (tensor, tensors))
        hit, a, q = found if len(found) == 3 else (*found, None)
    else:
        a = quick_array(tensor, not gathering)
        if a is None:
            return False
        root = _validate.root(pg, name, rank, group_rank, *names)
        if pg._rank != root:
            hit = QUICK_OFF_ROOT.get((a.dtype, root, gathering, a.size)) if not tensors \
                else None
            q = None
        else:
            q = layout(tensors, pg._size, gathering)
            if q is None or q.dtype != a.dtype:
                return False
            hit = (_QUICK_GATHER if gathering else _QUICK_SCATTER).get(
                (a.dtype, a.size, root, *q.counts))
        if hit is None:
            return False
    # (found, and no Plan kept or run: the call made here, as direct messages or MPI's
    # Igatherv or Iscatterv)
    direct = pg.direct is not None
    if q is None:
        if direct:
            _rooted_direct.quick(name, pg, root, gathering, a, hit, None, tensor)
            return True
        mine, theirs = (a, hit.datatype), None
    else:
        # adjacent views, or separate tensors where the messages are direct (each to or
        # from its own tensor's memory), of sizes the general path validated
        if not (q.end_to_end or direct) or not apart(q, a):
            return False
        if direct:  # (kept by the Work an interrupt leaves: a may own none)
            _rooted_direct.quick(name, pg, root, gathering, a, hit, q, (tensor, tuple(tensors)))
            return True
        mine, theirs = (a, hit.datatype), (area(q), hit.counts, hit.datatype)
    args = (mine, theirs, root) if gathering else (theirs, mine, root)
    if gathering:
        quick(name, pg, "Igatherv", args, hit.sizes)
    else:
        quick(name, pg, "Iscatterv", args, hit.sizes)
    return True
