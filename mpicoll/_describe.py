"""How mpicoll words an MPI call for its messages: its arguments, and MPI's errors."""

from __future__ import annotations

import sys
from typing import Any

from .errors import MPIError, torch_flavoured


def summarise(args: Any) -> str:
    """Shapes, dtypes and counts of an MPI call's arguments, for a report."""
    np = sys.modules.get("numpy")  # no array exists before numpy is imported
    ndarray = np.ndarray if np is not None else ()
    parts: list[str] = []

    def walk(x: Any) -> None:
        if isinstance(x, ndarray):
            parts.append(f"{x.dtype}{list(x.shape)}")
        elif isinstance(x, (list, tuple)):
            if x and all(isinstance(v, int) for v in x):
                parts.append(f"counts {list(x)}" if len(x) < 17 else f"{len(x)} counts")
            else:
                for v in x:
                    walk(v)
        elif isinstance(x, int):
            parts.append(str(x))

    walk(args)
    return "args: " + ", ".join(parts) if parts else "no buffers"


def describe(e: Any) -> str:
    """An MPI error's own message."""
    try:
        return e.Get_error_string().strip()
    except Exception:
        return str(e)


def mpi_error(op: str, e: Any, args: Any = None, hint: str = "") -> MPIError:
    """The MPIError for MPI's exception ``e`` in ``op``: MPI's message, then the buffers
    and counts MPI was given (the one place MPI's errors become mpicoll's)."""
    where = f" [{summarise(args)}]" if args is not None else ""
    return torch_flavoured(MPIError)(op, f"{describe(e)}{where}{hint}")
