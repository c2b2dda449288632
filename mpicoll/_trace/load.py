"""Reading a dump folder: each rank's ``mpicoll`` record, whatever state the files are in.

A folder is read after something went wrong, so a bad file is the expected case, not an
error: a rank killed before it dumped has no file, a rank killed mid-write leaves its
temporary file, and the analysis of the ranks that did dump is still worth having. Each
problem becomes one line of ``problems`` and the file is left out.
"""

from __future__ import annotations

import pickle
import re
from pathlib import Path
from typing import Any

PREFIX = "mpicoll_trace_rank_"  # + global rank (the recorder's names; torch's -p prefix)
FORMAT = 1
_NAME = re.compile(re.escape(PREFIX) + r"(\d+)")

Dump = dict[str, Any]


class _BuiltinsOnly(pickle.Unpickler):
    """An unpickler that imports nothing: a dump holds only builtins, and a folder may
    come from anyone, so a file naming a class or function is refused, never run."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"refused {module}.{name}: a dump holds builtins only")


def _read(path: Path) -> Dump:
    """The ``mpicoll`` dict of one file; raises ValueError (or the unpickler's error)."""
    with path.open("rb") as f:
        data = _BuiltinsOnly(f).load()
    rec = data.get("mpicoll") if isinstance(data, dict) else None
    if not isinstance(rec, dict):
        raise ValueError("no 'mpicoll' record in it")
    if rec.get("format") != FORMAT:
        raise ValueError(f"format {rec.get('format')!r}, this analyzer reads {FORMAT}")
    if not isinstance(rec.get("records"), list):
        raise ValueError("its 'records' is not a list")
    return rec


def load(folder: str | Path, problems: list[str] | None = None) -> dict[int, Dump]:
    """Every readable dump in ``folder``, by global rank.

    Args:
        folder: the dump folder (``MPICOLL_TRACE_DIR`` of the job).
        problems: when given, one line is appended for each file left out and for each
            rank of the world that has no readable dump.

    Returns:
        global rank -> the file's ``"mpicoll"`` dict (schema format 1).

    Raises:
        NotADirectoryError, FileNotFoundError: ``folder`` is not a folder.
    """
    problems = [] if problems is None else problems
    files: dict[int, Path] = {}
    for path in Path(folder).iterdir():
        if not path.name.startswith(PREFIX):
            continue
        m = _NAME.fullmatch(path.name)
        if m is None:
            problems.append(f"{path.name}: left out (a write cut short, or not a dump)")
        else:
            files[int(m.group(1))] = path
    dumps: dict[int, Dump] = {}
    for rank in sorted(files):
        try:
            rec = _read(files[rank])
        except Exception as e:  # any damage: truncated, garbage, another format
            problems.append(f"rank {rank}: {files[rank].name} unreadable, left out "
                            f"({type(e).__name__}: {e})")
            continue
        if rec.get("rank") != rank:
            problems.append(f"rank {rank}: its file says rank {rec.get('rank')!r}; "
                            "taken as rank " + str(rank))
        dumps[rank] = rec
    world = max([d.get("world_size", 0) for d in dumps.values()] + [r + 1 for r in files],
                default=0)
    absent = [r for r in range(world) if r not in files]
    if absent:
        problems.append(f"no dump from rank{'s' if len(absent) > 1 else ''} "
                        f"{', '.join(map(str, absent))} (killed before dumping, or never "
                        "recording)")
    return dumps
