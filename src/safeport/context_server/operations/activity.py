"""What happened: the change feed, this workspace's audit trail, and the server's health."""

from __future__ import annotations

from datetime import UTC, datetime

from safeport.context_server.operations.base import Operations, clamp, iso_time
from safeport.context_server.operations.tool_results import (
    AuditEntry,
    AuditTrail,
    ChangeFeedPage,
    ChangeItem,
    Health,
)


class FeedOperations(Operations):
    """``get_recent_changes``, ``get_audit_trail`` and ``get_health``."""

    def get_recent_changes(self, cursor: str | None, limit: int) -> ChangeFeedPage:
        limit = clamp(limit, 1, 500, 50)
        page = self.feed.page(cursor, limit)
        changes = [
            ChangeItem(
                seq=c.seq, kind=c.kind, path=c.path, modified=iso_time(c.mtime_ns), size=c.size
            )
            for c in page.changes
            if not self.path_is_private(c.path)  # re-checked when served
        ]
        return ChangeFeedPage(changes=changes, cursor=page.cursor, more=page.more, reset=page.reset)

    def get_audit_trail(
        self, limit: int, origin: str | None, tool: str | None, only_denied: bool
    ) -> AuditTrail:
        limit = clamp(limit, 1, 1000, 50)
        records = self.journal.trail(10_000)
        entries = []
        for rec in reversed(records):
            body = rec.get("body")
            if not isinstance(body, dict):
                continue
            if not self.journal.is_ours(body):
                continue  # another workspace's reads: its paths and queries are not ours to show
            if origin is not None and body.get("origin") != origin:
                continue
            if tool is not None and body.get("tool") != tool:
                continue
            if only_denied and not body.get("denied"):
                continue
            args = body.get("args")
            entries.append(
                AuditEntry(
                    seq=rec.get("seq"),
                    time=rec.get("ts"),
                    origin=body.get("origin"),
                    tool=body.get("tool"),
                    args=args if isinstance(args, dict) else None,
                    bytes=body.get("bytes"),
                    denied=body.get("denied"),
                    reason=body.get("reason"),
                )
            )
            if len(entries) >= limit:
                break
        return AuditTrail(entries=entries)

    def get_health(self) -> Health:
        counts = self.index.counts()
        return Health(
            status="ok" if self.index.last_error is None else "degraded",
            roots=len(self.workspace.roots),
            index_state=self.index.state,
            index_walk=self.index.walk,
            index_files=counts["files"],
            index_bytes=counts["bytes"],
            index_last_refresh=(
                datetime.fromtimestamp(self.index.last_refresh, UTC).isoformat()
                if self.index.last_refresh
                else None
            ),
            index_error=self.index.last_error,
            journal_records_written=self.journal.head_seq,
            secrets_redacted=self.secrets_redacted,
            redaction_off=[
                r.name
                for r in self.workspace.roots
                if r.path in self.workspace.secrets.unredacted_roots
            ],
            policy=self.policy,
            instance=self.feed.instance,
        )
