"""paddle.distributed.ParallelEnv: this process's place in the job."""

from __future__ import annotations

import os

import mpicoll as _m

from ._groups import get_rank, get_world_size, init_parallel_env


class ParallelEnv:
    """paddle.distributed.ParallelEnv: this process's place in the job, from MPI.

    ``rank``/``world_size`` come from MPI (Paddle reads its launcher's
    environment variables, absent under ``mpiexec``); ``device_id`` and the
    endpoints keep Paddle's environment variables, and CPU defaults.
    """

    def __init__(self) -> None:
        self._device_id = int(os.getenv("FLAGS_selected_gpus", "0").split(",")[0])
        self._trainer_endpoints = os.getenv("PADDLE_TRAINER_ENDPOINTS", "").split(",")
        self._current_endpoint = os.getenv("PADDLE_CURRENT_ENDPOINT", "")
        self._nrings = int(os.getenv("FLAGS_nccl_nrings", "1"))
        self._pg_timeout = int(os.getenv("PADDLE_PG_TIMEOUT", "1800000"))

    @property
    def rank(self) -> int:
        """This process's global rank."""
        return _m.get_rank()

    local_rank = rank  # Paddle's alias

    @property
    def world_size(self) -> int:
        """Number of processes in the job."""
        return _m.get_world_size()

    nranks = world_size  # Paddle's alias

    @property
    def device_id(self) -> int:
        """``FLAGS_selected_gpus``' first entry (0 by default)."""
        return self._device_id

    dev_id = device_id  # Paddle's alias

    @property
    def device_type(self) -> str:
        """The custom device type: "" (none)."""
        return ""

    @property
    def current_endpoint(self) -> str:
        return self._current_endpoint

    @property
    def trainer_endpoints(self) -> list[str]:
        return self._trainer_endpoints

    @property
    def nrings(self) -> int:
        return self._nrings

    @property
    def pg_timeout(self) -> int:
        return self._pg_timeout


def gloo_init_parallel_env(rank_id: int, rank_num: int, server_endpoint: str) -> None:
    """Paddle's CPU (gloo) initialisation: here MPI's, which must agree with
    ``rank_id`` and ``rank_num``; ``server_endpoint`` is unused (MPI's launcher
    connects the processes). It may be called again, and after
    :func:`init_parallel_env`, as Paddle's may."""
    init_parallel_env()
    for arg, got, mpis in (("rank_num", rank_num, get_world_size()), ("rank_id", rank_id,
                                                                      get_rank())):
        if got != mpis:
            raise ValueError(f"gloo_init_parallel_env: {arg} must match MPI's: expected "
                             f"{mpis}, got {got!r} (mpicoll takes the world from mpiexec)")


def gloo_barrier() -> None:
    """A barrier of the global group (Paddle's gloo barrier)."""
    _m.barrier()


def gloo_release() -> None:
    """Paddle releases its gloo context here; MPI's communicators live on: nothing to do."""
