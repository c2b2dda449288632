"""The benchmark's cases: what each one times, registered by name.

A case is one function, registered with :func:`register`, that receives a
:class:`Ctx` (message size, framework, the torch.distributed-style namespace to
call) and returns a :class:`Timed`: the call to time, the raw mpi4py call on the
same memory, and a check of one call's result. Nothing here starts MPI.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["CASES", "Case", "Ctx", "Timed", "cases", "register"]

# Modules that define cases, imported by cases(): add yours here.
_MODULES = ("cases", "separate")


@dataclass
class Timed:
    """What one case times, for one message size and one framework.

    Attributes:
        call: the timed call (mpicoll's, or torch.distributed's for the torch
            backend and gloo variants).
        check: one call on outputs reset first; True when this rank's result is
            right (or not specified, as a root-only result on other ranks).
        raw: the raw mpi4py call on the same memory, the floor ``call`` is
            compared with; None where the case has none.
        list_len: the number of tensors per list for the list forms (per-tensor
            figures are reported for them), None for single-tensor calls.
    """

    call: Callable[[], Any]
    check: Callable[[], bool]
    raw: Callable[[], Any] | None = None
    list_len: int | None = None


@dataclass
class Ctx:
    """Everything a case builds from.

    Attributes:
        nbytes: message size per rank, in bytes.
        framework: "numpy", "torch", ...: the tensors ``call`` takes.
        dist: the namespace ``call`` calls, with torch.distributed's names:
            ``mpicoll``, or torch.distributed bound to a group.
        comm: ``MPI.COMM_WORLD``; ``MPI``: the ``mpi4py.MPI`` module.
        memory: numpy arrays shared by every variant of this case and size.
    """

    nbytes: int
    framework: str
    dist: Any
    comm: Any
    MPI: Any
    memory: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def rank(self) -> int:
        return int(self.comm.Get_rank())

    @property
    def ranks(self) -> int:
        return int(self.comm.Get_size())

    def elems(self, multiple: int = 1) -> int:
        """float32 elements in ``nbytes``, rounded down to ``multiple`` (at least one)."""
        return max(multiple, (self.nbytes // 4) // multiple * multiple)

    def array(self, name: str, make: Callable[[], np.ndarray]) -> np.ndarray:
        """The numpy array ``name`` of this case and size, made by ``make()`` once."""
        if name not in self.memory:
            self.memory[name] = make()
        return self.memory[name]

    def tensor(self, a: np.ndarray) -> Any:
        """``a`` as a tensor of ``framework``, over the same memory."""
        if self.framework == "numpy":
            return a
        if self.framework == "torch":
            import torch  # lazy: torch loads only for a torch variant

            return torch.from_numpy(a)
        raise ValueError(f"bench: framework {self.framework!r} has no zero-copy view of numpy "
                         f"memory: build its tensors in the case")

    def chunks(self, x: Any) -> list[Any]:
        """``x`` split into one adjacent view per rank (the seeds' ``.chunk()`` lists)."""
        if isinstance(x, np.ndarray):
            return np.split(x, self.ranks)
        return list(x.chunk(self.ranks))

    def check_output(self, call: Callable[[], Any], out: np.ndarray,
                     expect: Callable[[], np.ndarray | None], fill: float = -1.0) -> bool:
        """Fill ``out`` with ``fill`` (so a call that writes nothing fails), call, compare.

        ``expect()`` gives this rank's expected ``out``, or None where the result is
        not specified on this rank.
        """
        out[...] = fill
        call()
        want = expect()
        return want is None or bool(np.array_equal(out, want))


@dataclass(frozen=True)
class Case:
    """A registered case: its name, builder, frameworks, and torch.distributed variants."""

    name: str
    build: Callable[[Ctx], Timed]
    frameworks: tuple[str, ...]
    torch_distributed: bool


CASES: dict[str, Case] = {}


def register(name: str, frameworks: tuple[str, ...] = ("numpy", "torch"), *,
             torch_distributed: bool = True) -> Callable[[Callable[[Ctx], Timed]],
                                                         Callable[[Ctx], Timed]]:
    """Register a case: decorate a function ``Ctx -> Timed``.

    Args:
        name: the case's name, as tables, JSON and ``--ops`` spell it.
        frameworks: the frameworks whose tensors it times (``mpicoll_<framework>``
            columns).
        torch_distributed: also time it through ``torch.distributed`` on a group of
            the ``"mpicoll"`` backend and on gloo (the builder is then called with
            ``framework="torch"`` and ``dist`` set to torch.distributed).

    Raises:
        ValueError: ``name`` is registered already.
    """
    def decorate(build: Callable[[Ctx], Timed]) -> Callable[[Ctx], Timed]:
        if name in CASES:
            raise ValueError(f"bench: case {name!r} is registered already")
        CASES[name] = Case(name, build, tuple(frameworks), torch_distributed)
        return build
    return decorate


def cases() -> dict[str, Case]:
    """Every registered case, in registration order (the case modules load on first call)."""
    for module in _MODULES:
        importlib.import_module(f"{__package__}.{module}")
    return CASES
