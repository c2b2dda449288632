"""The backend in one device's slot of a group: ``"cpu:mpicoll,cuda:nccl"`` (torch 2.15).

A group whose devices have different backends holds one c10d ``Backend`` per device
and sends each tensor to its device's. torch 2.15 lets a Python class extend
``Backend`` (torch's own ``nccl4py_backend`` is one); 2.13's has no Python
constructor, and there mpicoll's creator returns the whole group instead
(:class:`~mpicoll.torch._backend.MpicollProcessGroup`), every device over mpicoll.
"""

from __future__ import annotations

import sys

from torch._C._distributed_c10d import Backend as _C10dBackend

from . import _shrinking
from ._backend import Collectives


def _per_device() -> type | None:
    """The backend as a c10d ``Backend`` for one device's slot of a group
    (``"cpu:mpicoll,cuda:nccl"``), on a torch whose Backend a Python class can extend
    (2.15; 2.13's has no Python constructor); else None."""
    try:
        type("Probe", (_C10dBackend,), {})(0, 1)
    except TypeError:  # "No constructor defined": no Python Backend on this torch
        return None

    class MpicollBackend(Collectives, _C10dBackend):
        """torch.distributed c10d Backend whose collectives run over MPI via mpicoll: the
        CPU slot of a group whose other devices have their own backends."""

    return MpicollBackend


MpicollBackend = _per_device()
if MpicollBackend is not None:
    _shrinking.backend_class.append(MpicollBackend)  # what a shrunk group is handed back as


def other_devices() -> bool:
    """Whether the group torch is making now gives another device another backend
    (``"cpu:mpicoll,cuda:nccl"``): read from the caller of mpicoll's creator, torch's
    ``_new_process_group_helper``, whose ``backend_config`` maps devices to backends.
    False where that cannot be read (the whole group is then mpicoll's)."""
    frame = sys._getframe(2)  # other_devices <- the creator <- torch's helper
    config = frame.f_locals.get("backend_config")
    get = getattr(config, "get_device_backend_map", None)
    if get is None:
        return False
    return len(set(get().values())) > 1
