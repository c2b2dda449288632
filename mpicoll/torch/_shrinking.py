"""torch 2.15's ``shrink_group`` over the backend: the part of the backend it calls."""

from __future__ import annotations

from typing import Any

import mpicoll

# the c10d Backend class a shrunk group is handed back as: filled by mpicoll.torch._device on
# a torch whose Backend a Python class can extend (2.15); empty elsewhere
backend_class: list[type] = []


class Shrinking:
    """The shrinking part of the backend's classes (:mod:`._backend`): torch's
    ``shrink_group`` asks the group's backend whether it shrinks, then for the Backend of
    a group without the given ranks, which it installs in a new ProcessGroup."""

    __slots__ = ()  # a mixin: the state (``_group``, ``_store``) is the class's

    @property
    def supports_shrinking(self) -> bool:
        """Yes where the shrunk group can be handed back as a c10d Backend (torch 2.15)."""
        return bool(backend_class)

    def shrink(self, ranks_to_exclude: Any, shrink_flags: int = 0, opts: Any = None) -> Any:
        """The Backend of a group of the ranks that stay, made by them alone
        (:func:`mpicoll.shrink_group`: excluded ranks take no part, and may be gone)."""
        if not backend_class:
            raise TypeError("mpicoll backend: shrinking needs a torch whose c10d Backend a "
                            "Python class can extend (2.15 on)")
        new = mpicoll.shrink_group(list(ranks_to_exclude), self._group, shrink_flags)
        return backend_class[0](new, self._store)
