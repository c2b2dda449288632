"""MPICOLL_* environment settings, read once."""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from typing import Any

_warned: set[str] = set()

DEFAULT_TIMEOUT = 1800.0  # seconds: torch's default for gloo
DEFAULT_NOTICE = 60.0  # seconds: the first "still waiting" notice


def flag(name: str, default: Any, env: Mapping[str, str] | None = None) -> Any:
    """A boolean setting: 1/true/yes/on or 0/false/no/off; ``default`` when unset."""
    raw = (os.environ if env is None else env).get(name)
    if raw is None or raw == "":
        return default
    val = raw.strip().lower()
    if val in ("1", "true", "yes", "on"):
        return True
    if val in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"environment variable {name}={raw!r}: expected 0 or 1")


def seconds(name: str) -> float | None:
    """A duration in seconds, or None when unset or 0."""
    raw = os.environ.get(name)
    if not raw:
        return None
    try:
        val = float(raw)
    except ValueError:
        raise ValueError(f"environment variable {name}={raw!r}: expected seconds") from None
    return val if val > 0 else None


def as_seconds(timeout: Any) -> float:
    """A timeout given as seconds or ``datetime.timedelta``, in seconds."""
    return float(getattr(timeout, "total_seconds", lambda: timeout)())


def warn_once(key: str, message: str) -> None:
    """Emit ``message`` as a RuntimeWarning once per process."""
    if key not in _warned:
        _warned.add(key)
        warnings.warn(message, RuntimeWarning, stacklevel=3)


class Settings:
    """MPICOLL_* settings that the hot path consults (read once, on first use)."""

    __slots__ = ("check", "notice", "sizes", "timeout")

    def __init__(self) -> None:
        check = flag("MPICOLL_CHECK", None)
        self.check = bool(check)  # 1: checked mode, every signature compared
        self.sizes = check is not False  # 0 turns off even the v-collectives' counts
        # (_collectives/_sizes)
        # as torch's default collective timeout (gloo): no job waits for ever by default;
        # MPICOLL_TIMEOUT=0 turns it off
        raw = os.environ.get("MPICOLL_TIMEOUT")
        self.timeout = DEFAULT_TIMEOUT if raw is None or raw == "" else seconds("MPICOLL_TIMEOUT")
        # a wait this long is reported while the job goes on, then every 4 times as long
        # (the timeout, 30 minutes by default, ends it); MPICOLL_NOTICE=0 turns it off
        raw = os.environ.get("MPICOLL_NOTICE")
        self.notice = DEFAULT_NOTICE if raw is None or raw == "" else seconds("MPICOLL_NOTICE")


def timeout_for(group: Any) -> float | None:
    """The timeout that applies to ``group``: its own, else MPICOLL_TIMEOUT (default 30
    minutes; 0 means none)."""
    t = getattr(group, "timeout", None)
    return t if t else settings().timeout


_settings: Settings | None = None


def settings() -> Settings:
    """The process-wide settings."""
    global _settings
    if _settings is None:
        _settings = Settings()
    return _settings
