"""mpicoll's benchmark: ``python -m mpicoll.bench`` (see ``__main__`` for the commands).

Importing this package starts no MPI; the commands start it when they run.

Adding a case is one function. Register it in ``mpicoll/bench/cases.py`` (or in
a module of this package listed in ``registry._MODULES``) with :func:`register`:
it receives a :class:`Ctx` and returns a :class:`Timed`::

    @register("all_reduce(persistent)", frameworks=("numpy", "torch"),
              torch_distributed=False)
    def all_reduce_persistent(ctx: Ctx) -> Timed:
        n, MPI = ctx.elems(), ctx.MPI
        buf = ctx.array("buf", lambda: np.ones(n, np.float32))  # shared by every variant
        work = ctx.dist.all_reduce_init(ctx.tensor(buf))           # ctx.dist is mpicoll
        want = np.full(n, ctx.ranks, np.float32)
        return Timed(
            call=work.start,
            check=lambda: ctx.check_output(work.start, buf, lambda: want, fill=1.0),
            raw=lambda: ctx.comm.Allreduce(MPI.IN_PLACE, [buf, MPI.FLOAT], MPI.SUM))

It then runs in ``make bench`` (every message size, every framework listed),
can be chosen with ``--ops``, and can be timed by ``overhead --ops NAME``.
``frameworks`` may name frameworks whose tensors cannot view numpy memory (jax):
such a case builds its own tensors from ``ctx.framework`` instead of
``ctx.tensor``.
"""

from __future__ import annotations

from .registry import CASES, Case, Ctx, Timed, cases, register

__all__ = ["CASES", "Case", "Ctx", "Timed", "cases", "register"]
