"""The compiled core (mpicoll/_core.c): its variant for the MPI family that mpi4py
loaded, configured, or None with the reason, so that mpicoll runs on its Python path.

setup.py builds ``mpicoll._core_mpich`` (the MPICH ABI: MPICH, Intel MPI, Cray MPICH,
MVAPICH) or ``mpicoll._core_openmpi`` against the MPI its ``mpicc`` names. Here the
family of the library mpi4py loaded picks the variant, so a core built for the other
family is never loaded. ``MPICOLL_CORE=0`` keeps the Python path.

The XLA FFI handler of ``mpicoll.jax`` (mpicoll/_jax_ffi.c, ``mpicoll._jax_ffi``) is the
core's other part: built where JAX's headers are found at build time, loaded by
:func:`jax_handler`, kept off by ``MPICOLL_CORE=0`` too.
"""

from __future__ import annotations

import importlib
from typing import Any

from . import _recorder
from ._env import flag, timeout_for
from ._watched import watched

API = 17  # what this Python side calls in the core (mpicoll/_core.c, CORE_API)
module: Any = None  # the loaded core, or None: the Python path
why = "not loaded yet (it loads with the first collective)"
_tried = False
_when_loaded: list[Any] = []  # callables given the core once it is in use

REBUILD = ("rebuild it with the MPI that mpi4py uses: `make venv`, or `pip install "
           "--no-build-isolation -e .` with that MPI's mpicc on the PATH (or in $MPICC)")


def load() -> Any:
    """The configured core, or None (:data:`why` says why); decided once per process."""
    global module, why, _tried
    if _tried:
        return module
    _tried = True
    if not flag("MPICOLL_CORE", True):
        why = "off (MPICOLL_CORE=0): the Python path"
        return None
    from ._mpi import MPI  # lazy: MPI is up already (a collective is being made)

    family = "openmpi" if MPI.Get_library_version().startswith("Open MPI") else "mpich"
    try:
        core = importlib.import_module(f"mpicoll._core_{family}")
    except ImportError as e:
        why = f"not built for this MPI ({family} family: {e}); the Python path; {REBUILD}"
        return None
    if core.FAMILY != family:  # (a file renamed by hand: never loaded)
        why = f"built for {core.FAMILY}, but MPI is of the {family} family; {REBUILD}"
        return None
    if getattr(core, "API", None) != API:  # (built from another version's _core.c)
        why = (f"built from another version of mpicoll (its API {getattr(core, 'API', 1)}, "
               f"this mpicoll's {API}); the Python path; {REBUILD}")
        return None
    core.configure(_recorder.capacity if _recorder.ring is not None else 0, _recorder.ids,
                   _recorder.inside, _recorder.is_inside, _block, watched.end,
                   MPI.Exception, _recorder.ISSUED_STATE, _recorder.FAILED)
    _recorder.ids = _recorder._ids = core.ids  # (after the numbers it gave out)
    _recorder.rings.append(core.records)
    module = core
    for use in _when_loaded:
        use(core)
    why = (f"in use ({family} family, built against MPI {core.MPI_VERSION}."
           f"{core.MPI_SUBVERSION}): repeated blocking calls are looked up, issued, "
           "waited on and recorded in C (all_reduce, broadcast, reduce, gather, scatter, "
           "all_to_all_single, all_gather_into_tensor, reduce_scatter_tensor, and lists "
           "of tensors, chunks of one or apart; on groups of 2 to 8 ranks the kept "
           "messages of every collective, in a plan cache of 16 per group)")
    return core


def when_loaded(use: Any) -> None:
    """Call ``use(core)`` once the core is in use: now, where it is already; never where
    mpicoll runs on its Python path. (How a layer that the runtime does not import, such
    as the tensor adapters, takes the core's parts.)"""
    if module is not None:
        use(module)
    else:
        _when_loaded.append(use)


def jax_handler() -> tuple[Any, str]:
    """``mpicoll._jax_ffi`` (the XLA FFI handler of mpicoll.jax's compiled collectives),
    or None; and why, in words."""
    if not flag("MPICOLL_CORE", True):
        return None, "off (MPICOLL_CORE=0): XLA's Python buffer callback"
    try:
        handler = importlib.import_module("mpicoll._jax_ffi")
    except ImportError as e:
        return None, (f"not built ({e}); XLA's Python buffer callback; build it where jax "
                      "is installed: `make core`, or `pip install --no-build-isolation -e .`")
    return handler, (f"in use (XLA FFI API {handler.FFI_MAJOR}.{handler.FFI_MINOR}): a "
                     "collective inside jax.jit calls mpicoll's host function from C")


def _block(name: str, group: Any, seq: int, keep: Any) -> int:
    """The core's wait goes on past its tests: registered with the monitor."""
    return watched.begin(name, group, seq, keep, timeout_for(group))
