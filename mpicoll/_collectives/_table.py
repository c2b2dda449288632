"""The quick paths' tables: dicts bounded in size, so memory stays flat however many
signatures a job's calls have (an MoE loop's split sizes change every step).

A table keeps its newest :data:`CAPACITY` entries: storing one more drops the oldest
stored (first in, first out; a hit moves nothing, so a lookup costs what a dict's
does). A call whose entry was dropped takes the general path, which is correct and
slower, and stores it again.
"""

from __future__ import annotations

from typing import Any

CAPACITY = 256  # entries per table


class Table(dict):
    """A dict that keeps its newest ``capacity`` entries (written with ``t[k] = v``)."""

    __slots__ = ("capacity",)

    def __init__(self, capacity: int = CAPACITY) -> None:
        super().__init__()
        self.capacity = capacity

    def __setitem__(self, key: Any, value: Any) -> None:
        if len(self) >= self.capacity and key not in self:
            del self[next(iter(self))]
        super().__setitem__(key, value)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    def update(self, *args: Any, **kwargs: Any) -> None:
        for k, v in dict(*args, **kwargs).items():
            self[k] = v
