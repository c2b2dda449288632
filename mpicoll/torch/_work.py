"""torch-side Work objects over mpicoll Works, with futures that complete on their own."""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist

from .._progress import engine, threads_may_test
from .._work import Work


class TorchWork(dist._Work):
    """A ``torch.distributed`` Work for one or more mpicoll Works.

    ``get_future()`` returns a future that the progress thread completes when
    the MPI requests do, so DDP's gradient all-reduces overlap the backward pass.
    """

    def __init__(self, works: list[Work], outputs: list[Any], group_ranks: list[int] | None = None,
                 timeout: float | None = None):
        super().__init__()
        self._works = works
        self._outputs = outputs
        self._future: torch.futures.Future | None = None
        self._ranks = group_ranks
        self._timeout = timeout  # the call's own (its options'): wait()'s default
        self._exc: BaseException | None = None

    def wait(self, timeout: Any = None) -> bool:
        timeout = timeout if timeout else self._timeout
        for w in self._works:
            callback = engine.claim(w)
            try:
                w.wait(timeout if timeout else None)
            except BaseException as e:
                if w.exception() is None:
                    # not the operation's failure (the wait timed out, or was interrupted):
                    # it is still pending, and its future still completes on its own
                    if callback is not None:
                        engine.watch(w, callback)
                    raise
                self._exc = e
                self._settle()
                raise
            if callback is not None:  # its future's bookkeeping: this part is done
                callback(w)
        self._settle()
        return True

    def _settle(self) -> None:
        fut = self._future
        if fut is not None and not fut.done():
            if self._exc is not None:
                fut.set_exception(self._exc)
            else:
                fut.set_result(self._outputs)

    def get_future(self) -> torch.futures.Future:
        if self._future is None:
            self._future = torch.futures.Future()
            pending = [w for w in self._works if not w.is_completed()]
            if pending and not threads_may_test():
                # no thread may call MPI beside this one (MPI gave a thread level below
                # multiple, as the user asked): the future completes here, under the
                # group's watchdog (not the call's own timeout, which is wait()'s); the
                # operation's error is the future's. Interrupted, no future is kept: the
                # next get_future() waits again
                try:
                    for w in pending:
                        w.wait()
                except Exception as e:
                    if w.exception() is None:
                        self._future = None
                        raise
                    self._exc = e
                except BaseException:
                    self._future = None
                    raise
                self._settle()
                return self._future
            if not pending:
                self._exc = next((w.exception() for w in self._works if w.exception()), None)
                self._settle()
            else:
                remaining = {id(w) for w in pending}

                def done(work: Work) -> None:
                    if work.exception() is not None:
                        self._exc = work.exception()
                    remaining.discard(id(work))
                    if not remaining:
                        self._settle()

                for w in pending:
                    engine.watch(w, done)
        return self._future

    def is_completed(self) -> bool:
        # through the engine: its thread may be testing the same requests (a future's), and
        # MPI completes a request in one thread at a time
        return all(engine.test(w) for w in self._works)

    def is_success(self) -> bool:
        return self.is_completed() and all(w.exception() is None for w in self._works)

    def exception(self) -> Any:
        return next((w.exception() for w in self._works if w.exception()), None)

    def result(self) -> list[Any]:
        self.wait()
        return self._outputs

    def synchronize(self) -> None:
        self.wait()

    def _source_rank(self) -> int:
        src = self._works[0].source_rank()
        return self._ranks.index(src) if self._ranks is not None else src

    def source_rank(self) -> int:
        return self._source_rank()


class CompletedWork(dist._Work):
    """What a blocking call returns: already done (one shared instance is enough)."""

    def __init__(self, outputs: list[Any] | None = None) -> None:
        super().__init__()
        self._outputs = outputs or []

    def wait(self, timeout: Any = None) -> bool:
        return True

    def is_completed(self) -> bool:
        return True

    def is_success(self) -> bool:
        return True

    def exception(self) -> Any:
        return None

    def result(self) -> list[Any]:
        return self._outputs

    def synchronize(self) -> None:
        return None

    def get_future(self) -> torch.futures.Future:
        fut: torch.futures.Future = torch.futures.Future()
        fut.set_result(self._outputs)
        return fut
