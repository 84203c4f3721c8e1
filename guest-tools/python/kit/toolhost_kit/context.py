"""What a running tool tells its caller, and asks about its call (contract
0.3.0's ``context`` import).

Get the running call's context with :func:`ctx`::

    import toolhost_kit as kit

    def search(args):
        files = list_files(args)
        for done, path in enumerate(files, 1):
            if kit.ctx().cancelled():
                raise kit.ToolError("cancelled", "the call was cancelled")
            scan(path)
            kit.ctx().progress(done, total=len(files), message="files searched")
        kit.ctx().log(kit.LogLevel.INFO, f"{len(files)} files searched")
        ...

Every function is cheap and never fails on the host's side. The host bounds
what a call reports (a rate and a byte budget set by its policy; past them
reports are dropped, and the latest progress is still delivered at the end),
records it with the call, and forwards it to the client only when the client
asked for it. So report freely, but not in the inner loop: once per file or
per thousand lines is plenty.

Inside a component :mod:`toolhost_kit.component` points the context at the
``toolhost:tool/context`` import. Natively (unit tests of tool logic) reports
are kept in a list that :func:`take_reports` returns, and
:meth:`Ctx.cancelled` is false unless a test called :func:`cancel_for_test`.
This module is pure Python, like the rest of the kit but ``component``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import List, Optional, Protocol, Union

__all__ = [
    "LOG_LEVELS",
    "ContextBackend",
    "Ctx",
    "Log",
    "LogLevel",
    "Progress",
    "Report",
    "cancel_for_test",
    "ctx",
    "set_context_backend",
    "take_reports",
]

_U64_MAX = 2**64 - 1


class LogLevel(str, Enum):
    """The severity of a log message (the WIT ``log-level``: the syslog
    levels MCP uses), least to most severe. A level may also be given as its
    name, e.g. ``"warning"``."""

    DEBUG = "debug"
    INFO = "info"
    NOTICE = "notice"
    WARNING = "warning"
    ERROR = "error"
    CRITICAL = "critical"
    ALERT = "alert"
    EMERGENCY = "emergency"

    def __str__(self) -> str:
        return self.value


#: The level names, least to most severe.
LOG_LEVELS = tuple(level.value for level in LogLevel)


@dataclass(frozen=True)
class Progress:
    """A progress report, as kept natively for tests."""

    done: int
    total: Optional[int] = None
    message: Optional[str] = None


@dataclass(frozen=True)
class Log:
    """A log message, as kept natively for tests."""

    level: LogLevel
    message: str


#: One report, as kept natively for tests.
Report = Union[Progress, Log]


class ContextBackend(Protocol):
    """Where the context's calls go (arguments already checked)."""

    def progress(self, done: int, total: Optional[int], message: Optional[str]) -> None: ...

    def log(self, level: LogLevel, message: str) -> None: ...

    def cancelled(self) -> bool: ...


class _Native:
    """The backend outside a component: reports are kept for tests."""

    def __init__(self) -> None:
        self.reports: List[Report] = []
        self.is_cancelled = False

    def progress(self, done: int, total: Optional[int], message: Optional[str]) -> None:
        self.reports.append(Progress(done, total, message))

    def log(self, level: LogLevel, message: str) -> None:
        self.reports.append(Log(level, message))

    def cancelled(self) -> bool:
        return self.is_cancelled


_native = _Native()
_backend: ContextBackend = _native


def set_context_backend(backend: Optional[ContextBackend]) -> None:
    """Sets where the context's calls go. The component glue sets it to the
    ``toolhost:tool/context`` import; ``None`` restores the native one."""
    global _backend
    _backend = _native if backend is None else backend


def _u64(what: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"progress: {what} must be an int, not {type(value).__name__}")
    if not 0 <= value <= _U64_MAX:
        raise ValueError(f"progress: {what} must be between 0 and 2**64 - 1, not {value}")
    return value


def _level(level: Union[LogLevel, str]) -> LogLevel:
    if isinstance(level, LogLevel):
        return level
    try:
        return LogLevel(level)
    except ValueError:
        raise ValueError(f"log level {level!r} is not one of {', '.join(LOG_LEVELS)}") from None


class Ctx:
    """The running call's context: get it with :func:`ctx`."""

    __slots__ = ()

    def progress(self, done: int, total: Optional[int] = None, message: Optional[str] = None) -> None:
        """Reports progress: ``done`` units of ``total`` (when known), with an
        optional short message. ``done`` should grow from call to call.

        Raises :class:`TypeError` or :class:`ValueError` (a bug in the tool)
        when ``done`` or ``total`` is not an integer from 0 to 2**64 - 1 or
        ``message`` is not a string.
        """
        done = _u64("done", done)
        if total is not None:
            total = _u64("total", total)
        if message is not None and not isinstance(message, str):
            raise TypeError(f"progress: message must be a str, not {type(message).__name__}")
        _backend.progress(done, total, message)

    def log(self, level: Union[LogLevel, str], message: str) -> None:
        """Logs a message for the person or agent at the client. ``level`` is
        a :class:`LogLevel` or its name (``"info"``, ``"warning"``, ...)."""
        if not isinstance(message, str):
            raise TypeError(f"log: message must be a str, not {type(message).__name__}")
        _backend.log(_level(level), message)

    def cancelled(self) -> bool:
        """Whether the caller cancelled the call: check it between units of
        work and return early. (The host stops the instance anyway; checking
        lets the tool stop where it chooses.)"""
        return bool(_backend.cancelled())


_ctx = Ctx()


def ctx() -> Ctx:
    """The running call's context."""
    return _ctx


def take_reports() -> List[Report]:
    """The reports made natively since the last call (oldest first), and
    forgets them. Inside a component reports go to the host: always empty."""
    reports = list(_native.reports)
    _native.reports.clear()
    return reports


def cancel_for_test(cancelled: bool = True) -> None:
    """Makes :meth:`Ctx.cancelled` answer ``cancelled`` natively (until it
    is called again)."""
    _native.is_cancelled = bool(cancelled)
