"""One base error with a human diagnostic, and the few kinds the CLI needs to tell apart.

Every error that can reach a person carries a one-sentence ``diagnostic()``, an ``exit_code``
(1 for a negative verdict, 2 for usage or environment) and the ``wire_code`` the gateway answers
it with on its sockets. Messages never contain secrets: callers pass only names, ids and
categories.
"""

from __future__ import annotations

from typing import ClassVar, Literal

# The codes a refusal carries on the gateway's sockets. They live here, on the lowest floor,
# beside the errors that name them, so the wire contracts above can import both.
ErrorCode = Literal["invalid", "denied", "locked", "timeout", "upstream", "unavailable", "internal"]


class Error(Exception):
    """Base of every error safeport raises on purpose."""

    exit_code = 2
    # Usage, a malformed value: ``invalid``. A negative verdict says ``denied``, a lock ``locked``.
    wire_code: ClassVar[ErrorCode] = "invalid"

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def diagnostic(self) -> str:
        """One clear sentence, plus what to do when there is something to do."""
        if self.hint:
            return f"{self.message}; {self.hint}"
        return self.message


class UsageError(Error):
    """The command or its input is malformed."""


class EnvironmentProblem(Error):
    """A folder, file or permission around safeport is not as it must be."""


class ConfigError(Error):
    """A configuration file is invalid (unknown key, bad reference, bad value)."""


class AuditError(Error):
    """A journal cannot be written or read safely."""


class JournalUnavailable(AuditError):
    """The journal could not be written durably; the step it would record must not proceed."""


class WireError(Error):
    """A frame or message on a local socket is malformed."""


class FrameTooLarge(WireError):
    """A frame declares a length over the limit; its bytes are never read."""


class Denied(Error):
    """A negative verdict: policy, identity or a human said no."""

    exit_code = 1
    wire_code: ClassVar[ErrorCode] = "denied"
