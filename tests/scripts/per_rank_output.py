"""Run a script with this rank's stdout/stderr in files of its own.

Usage: python per_rank_output.py <dir> <script | -c code> [args...]. The rank comes from the
launcher's environment (Hydra's PMI_RANK, Open MPI's OMPI_COMM_WORLD_RANK, PMIx's
PMIX_RANK), so MPI is not initialised here; the script runs as ``__main__``.
Launchers' own per-rank output options are not portable (Open MPI 5's
``--output dir=`` loses stdout when a rank also writes to stderr).
"""
import os
import runpy
import sys

out_dir, script, *args = sys.argv[1:]
rank = next(os.environ[k] for k in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK")
            if k in os.environ)
for fd, name in ((1, "out"), (2, "err")):
    f = os.open(os.path.join(out_dir, f"{name}.{rank}"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(f, fd)
    os.close(f)
sys.stdout = os.fdopen(1, "w", buffering=1)
sys.stderr = os.fdopen(2, "w", buffering=1)
if script == "-c":  # python -c CODE [args]
    code, *rest = args
    sys.argv = ["-c", *rest]
    exec(compile(code, "<string>", "exec"), {"__name__": "__main__"})
else:
    sys.argv = [script, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")
