"""The one error type the CLI turns into a one-line message and exit status 2."""

from __future__ import annotations


class TopomapError(Exception):
    """Bad input or an unusable file. ``str()`` is one line naming the file, line or field."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


class ImportFailure(TopomapError):
    """A file that cannot be imported; the message names file and line."""


class LogWithoutDump(ImportFailure):
    """An NCCL INFO log read as a topology that has no topology dump: `topomap nccl` reads it as a log
    (its channel lines); every other command cannot use it as a machine."""
