"""[3] What the tag of a direct message says of its call besides its count: which
collective, which dtype, which reduce op, so that two ranks whose calls differ in any of
them raise instead of exchanging (issue 52).

The messages of a direct call (:mod:`._messages`) are received with any tag, and each
carries its count in its tag; the low :data:`BITS` bits of that tag carry this
signature, the same on every rank making the same call. A receiver compares the whole
tag with the one it expects (in the compiled core, or in :meth:`.Direct.check`), so the
check costs nothing a call did not already pay: no extra message, no extra compare. Where
an MPI's tags are too few for both (``MPI_TAG_UB`` below 2**20), the tags carry counts
only, as before.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from .._tags import tag_ub

# 4 bits of collective, 5 of dtype, 4 of reduce op
KIND_BITS, DTYPE_BITS, OP_BITS = 4, 5, 4
FULL = KIND_BITS + DTYPE_BITS + OP_BITS

_KINDS = ("", "all_to_all_single", "all_to_all", "all_gather_into_tensor", "all_gather",
          "reduce_scatter_tensor", "reduce_scatter", "gather", "scatter",
          "all_gather_coalesced", "all_reduce", "broadcast", "ack", "barrier", "reduce")
_DTYPES = ("", "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
           "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool",
           "float8_e4m3fn", "float8_e5m2", "longdouble", "clongdouble")
_OPS = ("", "SUM", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "AVG", "PREMUL_SUM")
# numpy's names of the extended precisions on x86-64, by their portable ones in _DTYPES
_ALIASES = {"float128": "longdouble", "complex256": "clongdouble", "float96": "longdouble",
            "complex192": "clongdouble"}
_KIND = {k: i for i, k in enumerate(_KINDS)}
_DTYPE = {d: i for i, d in enumerate(_DTYPES)}
_OP = {o: i for i, o in enumerate(_OPS)}
_KIND_MASK = (1 << KIND_BITS) - 1
_OP_SHIFT = KIND_BITS + DTYPE_BITS
_OP_MASK = ((1 << OP_BITS) - 1) << _OP_SHIFT


def bits() -> int:
    """How many low bits of a direct message's tag carry the signature (0: none)."""
    return FULL if tag_ub() >= 1 << 20 else 0


def signature(op: str, dtype: Any, reduce_op: str | None = None) -> int:
    """The signature of collective ``op`` on elements of numpy ``dtype`` (with
    ``reduce_op``'s name, where it reduces); 0 where the tags carry none."""
    return code(op, dtype, reduce_op) if bits() else 0


@lru_cache(maxsize=1024)  # (numpy's dtype.name costs microseconds: asked per call)
def code(op: str, dtype: Any, reduce_op: str | None = None) -> int:
    """:func:`signature`'s number, whatever the tags hold (:class:`._sizes.Signed` sends
    it as data)."""
    kind = _KIND.get(op, 0)
    name = getattr(dtype, "name", str(dtype))
    dt = _DTYPE.get(_ALIASES.get(name, name), 0)
    rop = _OP.get(reduce_op or "", len(_OPS)) if reduce_op else 0
    return kind | dt << KIND_BITS | (rop & 15) << (KIND_BITS + DTYPE_BITS)


def acknowledging(sig: int) -> int:
    """The signature of the acknowledgement a rank sends the root of a broadcast or
    scatter of signature ``sig`` (:class:`._messages.Direct`'s ``acks``): its dtype, the
    kind "ack", and in the reduce op's bits (a rooted call has no reduce op) the kind of
    the call it acknowledges, so that a broadcast's acknowledgement is no scatter's."""
    if not sig:
        return 0
    return sig & ~(_KIND_MASK | _OP_MASK) | _KIND["ack"] | (sig & _KIND_MASK) << _OP_SHIFT


def _acknowledged(code: int) -> int:
    """The kind of call an acknowledgement's signature ``code`` acknowledges; 0 where
    ``code`` is no acknowledgement."""
    return (code & _OP_MASK) >> _OP_SHIFT if code & _KIND_MASK == _KIND["ack"] else 0


def roots_differ(mine: int, theirs: int) -> str | None:
    """Where a broadcast's or scatter's data met an acknowledgement of the same call,
    what the ranks took for the root, in words with {peer} and {me}; else None."""
    if _acknowledged(mine) and _acknowledged(mine) == theirs & _KIND_MASK:
        # (this rank is the root, and so is the peer: its data came where an
        # acknowledgement was awaited)
        return "rank {me} and rank {peer} each took itself for the root"
    if _acknowledged(theirs) and _acknowledged(theirs) == mine & _KIND_MASK:
        # (this rank took the peer for the root; the peer took this rank)
        return "rank {me} took rank {peer} for the root, and rank {peer} took rank {me}"
    return None


def _as_call(code: int) -> int:
    """A signature as the call it belongs to: an acknowledgement's, the call it
    acknowledges (its kind, no reduce op)."""
    kind = _acknowledged(code)
    return code & ~(_KIND_MASK | _OP_MASK) | kind if kind else code


def differs(mine: int, theirs: int) -> list[str]:
    """What differs between two signatures, each part as "what: theirs against mine"
    (where the collectives differ, a dtype or reduce op only one of them has is not
    named: a barrier has neither, a reduce_scatter's reduce op is not all_gather's)."""
    said = []
    mine, theirs = _as_call(mine), _as_call(theirs)
    kinds_differ = (mine ^ theirs) & _KIND_MASK
    for what, shift, width, names in (("collective", 0, KIND_BITS, _KINDS),
                                      ("dtype", KIND_BITS, DTYPE_BITS, _DTYPES),
                                      ("reduce op", KIND_BITS + DTYPE_BITS, OP_BITS, _OPS)):
        a, b = (mine >> shift) & ((1 << width) - 1), (theirs >> shift) & ((1 << width) - 1)
        if a != b and not (kinds_differ and shift and not (a and b)):
            said.append(f"{what}: {_name(names, b)!r} there, {_name(names, a)!r} here")
    return said


def _name(names: tuple[str, ...], code: int) -> str:
    return names[code] if 0 < code < len(names) else "another"
