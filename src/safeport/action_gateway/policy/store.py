"""Which policy the gateway serves: only the one a human accepted.

The agent may be able to edit gateway.toml (it runs as the same user), so the file on disk is
only a *proposal*. The served policy is the text stored in the vault by `sp policy accept`; an
edited file is reported as pending and changes nothing until it is accepted. Acceptance names
the digest of the text the human was shown, so a file swapped between the diff and the
passphrase prompt is refused instead of accepted unseen.
"""

from __future__ import annotations

import difflib
import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from safeport.action_gateway.policy.catalog import reply_cap
from safeport.errors import ConfigError, Denied, Error
from safeport.shared.schemas.config import GatewayPolicy, parse_gateway_policy, policy_digest
from safeport.shared.schemas.results import PolicySnapshot, PolicyState
from safeport.shared.text_lines import split_lines
from safeport.shared.visible_text import visible_exactly
from safeport.vault import replace_atomically
from safeport.vault.interface import UnlockedVault

MAX_POLICY_BYTES = 1024 * 1024


class PolicyChanged(Denied):
    """The file on disk is not the text the human reviewed."""


@dataclass(frozen=True)
class ServedPolicy:
    policy: GatewayPolicy
    digest: str
    text: str
    # Depends on the accepted policy alone: worked out at a credential's first session-scoped
    # proposal and kept while this policy is served (``ladder/resolve.py``).
    session_covers: dict[str, tuple[str, ...]] = field(
        default_factory=dict, compare=False, repr=False
    )

    @functools.cached_property
    def reply_cap(self) -> int:
        """The wire's cap on a reply under this policy: it walks every declared action, so it is
        worked out once per policy, not once per reply."""
        return reply_cap(self.policy)


@dataclass(frozen=True)
class PolicyFile:
    """gateway.toml as it is on disk now."""

    text: str | None
    digest: str | None
    error: str | None


class PolicyStore:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._served: ServedPolicy | None = None
        self._lock = threading.Lock()

    @property
    def served(self) -> ServedPolicy | None:
        return self._served

    def read_file(self) -> PolicyFile:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return PolicyFile(None, None, f"{self.path} does not exist")
        except OSError as exc:
            return PolicyFile(None, None, f"cannot read {self.path}: {exc.strerror}")
        if len(raw) > MAX_POLICY_BYTES:
            return PolicyFile(None, None, f"{self.path} is over 1 MiB")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return PolicyFile(None, None, f"{self.path} is not UTF-8")
        error = None
        try:
            parse_gateway_policy(text)
        except ConfigError as exc:
            error = exc.diagnostic()
        return PolicyFile(text, policy_digest(text), error)

    def load_accepted(self, vault: UnlockedVault) -> ServedPolicy | None:
        """Serve the policy stored in the vault (at unlock and on reload)."""
        accepted = vault.accepted_policy()
        if accepted is None:
            return self._served
        if self._served is not None and self._served.digest == accepted.digest:
            return self._served
        policy, digest = parse_gateway_policy(accepted.text)
        if digest != accepted.digest:
            raise ConfigError("the accepted policy in the vault does not match its digest")
        with self._lock:
            self._served = ServedPolicy(policy, digest, accepted.text)
        return self._served

    def accept(
        self,
        vault: UnlockedVault,
        shown_digest: str,
        *,
        text: str | None = None,
        inspect: Callable[[GatewayPolicy], None] | None = None,
    ) -> ServedPolicy:
        """Accept the file on disk (or ``text``, sent by `sp` from the human's own file) if it
        is exactly the text whose digest the human saw."""
        if text is None:
            current = self.read_file()
            if current.text is None:
                raise Error(current.error or "gateway.toml cannot be read")
            text, shown_now = current.text, current.digest
        else:
            shown_now = policy_digest(text)
        if shown_now != shown_digest:
            raise PolicyChanged(
                "gateway.toml changed after it was shown", hint="run `sp policy accept` again"
            )
        policy, digest = parse_gateway_policy(text)
        if inspect is not None:
            inspect(policy)  # e.g. each database's role, as its credential logs in: raises
        vault.accept_policy(text)
        if text != self.read_file().text:
            # The gateway's own copy follows, so its status says nothing is pending.
            replace_atomically(self.path, text.encode("utf-8"), mode=0o600)
        with self._lock:
            self._served = ServedPolicy(policy, digest, text)
        return self._served

    def pending_declares(self, kind: str, target: str, action: str) -> bool:
        """Whether gateway.toml on disk, edited but not accepted, declares this action: read
        only on the refusal path, so a request for an action the file also lacks costs one
        read and a parse, and the served policy is never touched."""
        current = self.read_file()
        served = self._served
        if current.text is None or current.error or (served and served.digest == current.digest):
            return False
        policy, _ = parse_gateway_policy(current.text)
        if kind == "ssh":
            host = policy.ssh.hosts.get(target)
            return host is not None and action in host.commands
        if kind == "sql":
            database = policy.sql.databases.get(target)
            return database is not None and action in database.queries
        service = policy.http.services.get(target)
        return service is not None and action in service.operations

    def status(self) -> PolicyState:
        return self._status(self.read_file(), self._served)

    def snapshot(self) -> PolicySnapshot:
        """:meth:`status` with the served text and the file's text, all from one read of the
        file and one look at the served policy: the digest a human accepts is then the digest
        of the text `sp policy accept` showed them, never that of a file swapped in between."""
        current, served = self.read_file(), self._served
        return PolicySnapshot(
            **dict(self._status(current, served)),
            served_text=served.text if served else None,
            file_text=current.text,
        )

    @staticmethod
    def _status(current: PolicyFile, served: ServedPolicy | None) -> PolicyState:
        return PolicyState(
            served=served.digest if served else None,
            file=current.digest,
            file_error=current.error,
            pending=bool(current.digest and (served is None or served.digest != current.digest)),
        )


def policy_diff(accepted: str | None, proposed: str) -> str:
    """A unified diff of gateway.toml against the accepted text, lines as TOML reads them."""
    return "\n".join(line.text for line in policy_diff_lines(accepted, proposed))


DiffKind = Literal["file", "hunk", "added", "removed", "same"]


@dataclass(frozen=True)
class DiffLine:
    """One line of the diff a human reviews; ``text`` is already safe to print."""

    kind: DiffKind
    text: str


def policy_diff_lines(accepted: str | None, proposed: str) -> tuple[DiffLine, ...]:
    """The diff line by line, each line's own characters escaped (``shared/visible_text.py``).

    Lines are split where TOML ends them (``shared/text_lines.py``), never where
    ``str.splitlines`` would: a U+2028 or U+0085 inside a comment stays inside that comment's
    line and is shown as an escape, so a table folded into a comment shows as removed.
    Escaping the joined diff would turn every newline into ``\\u000a`` and show one unreadable
    line; escaping per line keeps the layout and still shows a hidden character in a value as
    an escape, so the edit a person accepts is the edit they saw. Empty: no changes.
    """
    lines = difflib.unified_diff(
        split_lines(accepted or ""),
        split_lines(proposed),
        fromfile="accepted",
        tofile="gateway.toml",
        lineterm="",
    )
    # The two file headers are the first two lines and no others: a removed line reading
    # "-- x" is "--- x" in the diff, and is still a removed line.
    return tuple(_diff_line(line, header=n < 2) for n, line in enumerate(lines))


def _diff_line(line: str, *, header: bool) -> DiffLine:
    text = visible_exactly(line)
    if header:
        return DiffLine("file", text)
    if line.startswith("@@"):
        return DiffLine("hunk", text)
    if line.startswith("+"):
        return DiffLine("added", text)
    if line.startswith("-"):
        return DiffLine("removed", text)
    return DiffLine("same", text)
