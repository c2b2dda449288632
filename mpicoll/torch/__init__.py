"""torch.distributed backend "mpicoll": importing this module registers it.

Under ``mpiexec -n N``::

    import torch.distributed as dist
    import mpicoll.torch  # noqa: F401  (import it on every rank)

    dist.init_process_group("mpicoll")   # rank and world size come from MPI

Importing sets ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR`` and
``MASTER_PORT`` from MPI (rank 0 picks a free port and broadcasts it) unless every
rank already has values that agree with MPI, so torch's default ``env://``
rendezvous finds its store with no user setup. ``init_method="mpi://"`` does the
same without the environment.

``serve_as_mpi()`` (or ``MPICOLL_SERVE_AS_MPI=1``) also serves torch's own name "mpi",
for libraries that pick it when ``torch.distributed.is_mpi_available()``.
"""

from __future__ import annotations

import os
import socket
import sys
from datetime import timedelta
from typing import Any

import torch.distributed as dist
import torch.distributed.rendezvous  # noqa: F401  (the module; dist.rendezvous is a function)

from .._start import mpi
from ._backend import MpicollProcessGroup
from ._create import _create, records_itself

__all__ = ["MpicollProcessGroup", "init_process_group", "serve_as_mpi"]


def _master() -> tuple[str, int]:
    """Rank 0's address and a free port on it, known to every rank (one bcast)."""
    comm = mpi().COMM_WORLD
    host = socket.gethostname()
    hosts = comm.allgather(host)
    addr, port = "", 0
    if comm.Get_rank() == 0:
        addr = os.environ.get("MPICOLL_MASTER_ADDR", "")
        if not addr and len(set(hosts)) == 1:
            addr = "127.0.0.1"
        elif not addr:
            try:
                addr = socket.gethostbyname(host)
            except OSError as e:
                # the error reaches every rank through the bcast below
                addr = f"!mpicoll.torch: rank 0's host name {host!r} does not resolve ({e}): " \
                       "set MPICOLL_MASTER_ADDR to an address of rank 0 that the others can reach"
        with socket.socket() as s:
            s.bind(("", 0))
            port = s.getsockname()[1]
    addr, port = comm.bcast((addr, port), root=0)
    if addr.startswith("!"):
        raise RuntimeError(addr[1:])
    return addr, port


def _mpi_rendezvous(url: str, timeout: timedelta = timedelta(minutes=5), **kwargs: Any):
    comm = mpi().COMM_WORLD
    addr, port = _master()
    store = dist.TCPStore(addr, port, comm.Get_size(), comm.Get_rank() == 0, timeout,
                          wait_for_workers=False)
    yield store, comm.Get_rank(), comm.Get_size()
    raise RuntimeError("mpi:// rendezvous is single-use")


def _export_env() -> None:
    """Give torch's env:// rendezvous what it needs, from MPI (one or two small collectives).

    Values already in the environment are kept only when every rank has them and
    they agree with MPI; otherwise (unset, or inherited from another job, as when
    a launcher's environment leaks into a child job) they are replaced.
    """
    MPI = mpi()
    comm = MPI.COMM_WORLD
    env = os.environ
    consistent = (env.get("RANK") == str(comm.Get_rank())
                  and env.get("WORLD_SIZE") == str(comm.Get_size())
                  and bool(env.get("MASTER_ADDR")) and bool(env.get("MASTER_PORT")))
    if comm.allreduce(consistent, op=MPI.LAND):
        return
    addr, port = _master()
    local = comm.Split_type(MPI.COMM_TYPE_SHARED)
    env["RANK"] = str(comm.Get_rank())
    env["WORLD_SIZE"] = str(comm.Get_size())
    env["LOCAL_RANK"] = str(local.Get_rank())
    env["LOCAL_WORLD_SIZE"] = str(local.Get_size())
    env["MASTER_ADDR"] = addr
    env["MASTER_PORT"] = str(port)
    local.Free()


def registered() -> None:
    """torch's ``torch.distributed.backends`` entry point (torch >= 2.14): loading it
    imported this module, which registered the backend; nothing is left to do."""


def init_process_group(**kwargs: Any) -> None:
    """``torch.distributed.init_process_group("mpicoll", **kwargs)``."""
    dist.init_process_group("mpicoll", **kwargs)


dist.Backend.register_backend("mpicoll", _create, extended_api=True, devices=["cpu"])
records_itself("mpicoll")

from ._as_mpi import from_environment as _from_environment  # noqa: E402
from ._as_mpi import serve_as_mpi  # noqa: E402

sys.modules["torch.distributed.rendezvous"].register_rendezvous_handler("mpi", _mpi_rendezvous)
_export_env()
_from_environment()  # last: a refusal leaves the rest of the module in place
