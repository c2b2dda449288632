"""What torch asks a ProcessGroup for its names: the backend's, the group's, its description."""

from __future__ import annotations


class GroupNames:
    """The naming part of :class:`~mpicoll.torch._backend.MpicollProcessGroup`: the
    group's name and description (``_name`` and ``_desc``, which the class sets) and the
    backend's name, under the getters, setters and properties torch calls."""

    __slots__ = ()  # a mixin: the state is the class's

    def getBackendName(self) -> str:
        return "mpicoll"

    def setGroupName(self, name: str) -> None:
        self._name = name

    def getGroupName(self) -> str:
        return self._name

    @property
    def group_name(self) -> str:
        return self._name

    def setGroupDesc(self, desc: str) -> None:
        self._desc = desc

    def getGroupDesc(self) -> str:
        return self._desc

    @property
    def group_desc(self) -> str:
        return self._desc
