"""What every group of workspace operations shares: the workspace, its index, feed and journal, the
folders a call names, and the clamping of the numbers a model sends.

The operations themselves live by what a client does with them: :mod:`folders` (listings),
:mod:`reading` (files), :mod:`searching` (names and contents) and :mod:`activity` (changes, the
audit trail, health); :class:`~safeport.context_server.operations.service.WorkspaceService`
puts them together. Every path goes through :class:`Workspace` (one gate for every tool);
refusals are :class:`Refused` with a stable sentence, which the tool layer journals.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from safeport.context_server.index.change_feed import ChangeFeed
from safeport.context_server.index.search_index import SearchIndex
from safeport.context_server.operations.reads_journal import ReadsJournal
from safeport.context_server.policy.read_policy import Refused, refusal
from safeport.context_server.policy.request_path import parse_request_path
from safeport.context_server.workspace.gate import Workspace
from safeport.context_server.workspace.model import Located


def clamp(value: object, low: int, high: int, default: int) -> int:
    """Numbers from a model are suggestions: out-of-range values are pulled into range."""
    if isinstance(value, bool) or not isinstance(value, int):
        return default
    return max(low, min(high, value))


def iso_time(ns: int | None) -> str | None:
    if ns is None:
        return None
    return datetime.fromtimestamp(ns / 1e9, UTC).isoformat(timespec="seconds")


# How long one search_project call may scan before it answers with a cursor to go on from.
SCAN_BUDGET_S = 5.0


class Operations:
    """The state the operations share, and the folders a requested path names."""

    def __init__(
        self,
        workspace: Workspace,
        index: SearchIndex,
        feed: ChangeFeed,
        journal: ReadsJournal,
        *,
        scan_budget_s: float = SCAN_BUDGET_S,
    ) -> None:
        self.workspace = workspace
        self.scan_budget_s = scan_budget_s
        self.index = index
        self.feed = feed
        self.journal = journal
        # Secrets withheld from what this instance served (get_health); a count, never a value.
        self.secrets_redacted = 0

    @property
    def policy(self) -> dict[str, object]:
        return self.workspace.policy.summary()

    def path_is_private(self, text: str) -> bool:
        """Whether a requested path names, or leads to, something private. Never raises."""
        policy = self.workspace.policy
        raw = [p for p in re.split(r"[/\\]", text[:5000]) if p]
        if any(policy.is_private_name(p) for p in raw):
            return True
        try:
            request = parse_request_path(text, self.workspace.root_names)
        except Refused:
            return False
        roots = [r for r in self.workspace.roots if r.name == request.root]
        if not roots:
            return False
        literal = "/".join((str(roots[0].path), *request.parts))
        if policy.is_private(request.parts, literal):
            return True
        try:
            home, parts, _ = self.workspace.resolve(roots[0], request.parts)
        except Refused as exc:
            return exc.reason == "private"
        except OSError:
            return True  # unknown: say less rather than more
        return policy.is_private(parts, "/".join((str(home.path), *parts)))

    def _is_virtual_top(self, path: str) -> bool:
        if len(self.workspace.roots) == 1:
            return False
        request = parse_request_path(path, self.workspace.root_names)
        return not request.root

    def _folders(self, path: str) -> list[Located]:
        if self._is_virtual_top(path):
            return [self.workspace.locate(r.name) for r in self.workspace.roots]
        located = self.workspace.locate(path)
        if located.kind != "directory":
            raise refusal("not-a-folder")
        return [located]
