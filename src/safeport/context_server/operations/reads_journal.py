"""The reads journal: one hash-chained record per tool call, never any served content.

Records carry the declared origin (a label the client chose; it never changes a decision), the
tool, its arguments bounded and with ``<private>`` in place of any private path, the bytes
served, and the refusal reason. Several server processes append safely (the writer serialises
under flock).

A call's record is queued and written off the response path: a writer thread appends what the
calls of the last few milliseconds queued and fsyncs them, so every record is on disk within
:data:`DURABILITY_WINDOW_S` of its call (the window ``durability="batched"`` already gave the
fsync), and at once on a clean stop. A crash loses at most the records of that window. Once a
write fails, every later call is refused (``unavailable``): at most one window of answers goes
out without its record.
"""

from __future__ import annotations

import contextvars
import json
import logging
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from safeport.context_server.policy.display_names import masked_path
from safeport.errors import JournalUnavailable
from safeport.shared.audit import JournalWriter, read_records
from safeport.shared.exception_summary import summarize
from safeport.shared.known_secrets import shorten
from safeport.shared.paths import ensure_private_dir

log = logging.getLogger(__name__)

PRIVATE = "<private>"
MAX_STRING = 200
MAX_ITEMS = 20
PATH_KEYS = frozenset({"path", "paths", "id"})
# One argument's bounded value, serialised, at most this long: twenty of them stay far below
# the journal's 1 MiB record limit, whatever a client nests or escapes.
MAX_VALUE_BYTES = 8 * 1024
# An integer with more digits than a string may have characters is kept as (bounded) text.
MAX_INT = 10**MAX_STRING
# Every record is on disk (written and fsynced) within this long after its call.
DURABILITY_WINDOW_S = 0.1
# How long the writer waits after a first queued record before writing: the answer leaves
# first, and the calls of those milliseconds share one write and one fsync. A quarter of the
# window leaves the rest for the write, the fsync and a busy scheduler.
GATHER_S = DURABILITY_WINDOW_S / 4

IsPrivate = Callable[[str], bool]

# Set per tool call by the server: whether some record was written for it, so a call that
# failed before any tool code ran (unknown tool, arguments of the wrong type) is still journaled.
CALL_RECORDED: contextvars.ContextVar[list[bool] | None] = contextvars.ContextVar(
    "call_recorded", default=None
)


@dataclass(frozen=True)
class RemoteClient:
    """The approved remote client a call comes from, as its access token proves it: the
    client id (``sub``) and the name the human approved (``sp_client``). The token itself is
    carried for the gateway (a remote proposal names it); it is never journaled or shown."""

    client_id: str
    name: str
    access_token: str = field(default="", repr=False, compare=False)


# Set by the HTTP server for each request whose token held; every record queued while it is
# set names the client (a declared origin is only a label, this one is proven).
REMOTE_CLIENT: contextvars.ContextVar[RemoteClient | None] = contextvars.ContextVar(
    "remote_client", default=None
)


@dataclass(frozen=True)
class _Queued:
    """One call's record as it was asked; bounded and written by the writer thread."""

    tool: str
    args: dict[str, Any]
    is_private: IsPrivate
    served_bytes: int
    refused: str | None
    extra: Mapping[str, object] | None
    client: RemoteClient | None = None


class ReadsJournal:
    """Append-only record of what was asked and what was served."""

    def __init__(self, audit_dir: Path, origin: str, roots: Sequence[str] = ()) -> None:
        ensure_private_dir(audit_dir)
        self.path = audit_dir / "reads.jsonl"
        self.origin = bounded_text(origin) or "unknown"
        # The served roots' real paths: every record names them, and the trail shows a record
        # only to a server that serves every root it names (several workspaces share a home).
        self.roots = tuple(sorted(roots))
        self._writer = JournalWriter(self.path, durability="batched")
        self._queue: list[_Queued] = []
        self._queue_lock = threading.Lock()
        self._write_lock = threading.Lock()  # one batch at a time, so records keep their order
        self._queued = threading.Event()
        self._failed = False
        self._closed = False
        self._thread = threading.Thread(target=self._write_batches, daemon=True, name="reads")
        self._thread.start()

    def record(
        self,
        tool: str,
        args: Mapping[str, Any],
        *,
        is_private: IsPrivate,
        served_bytes: int,
        refused: str | None,
        extra: Mapping[str, object] | None = None,
    ) -> None:
        """Queue one record; a path refused as private is replaced even if its name looks
        innocent. Raises :class:`JournalUnavailable` once the journal is closed or a write
        failed, so the caller withholds its answer."""
        if self._closed or self._failed:
            raise JournalUnavailable(f"journal {self.path.name} cannot be written")
        client = REMOTE_CLIENT.get()
        queued = _Queued(tool, dict(args), is_private, served_bytes, refused, extra, client)
        with self._queue_lock:
            self._queue.append(queued)
            first = len(self._queue) == 1
        if first:
            self._queued.set()
        marker = CALL_RECORDED.get()
        if marker is not None:
            marker.append(True)

    def is_ours(self, body: Mapping[str, Any]) -> bool:
        """Whether a record belongs to the roots this server serves (all of them)."""
        roots = body.get("roots")
        if not isinstance(roots, list) or not roots:
            return False  # older records name no root: they cannot be attributed
        return set(roots) <= set(self.roots)

    @property
    def head_seq(self) -> int:
        """The sequence number of the last record, counting the ones still queued."""
        self._write_queued()
        return self._writer.head.seq

    def trail(self, limit: int) -> list[dict[str, Any]]:
        self.flush()
        return read_records(self.path, limit)

    def flush(self) -> None:
        """Write what is queued and fsync it now."""
        self._write_queued()
        self._writer.flush()

    def close(self) -> None:
        """Write and fsync what is queued, then stop the writer thread."""
        if self._closed:
            return
        self._closed = True
        self._queued.set()
        self._thread.join(timeout=5 * DURABILITY_WINDOW_S)
        try:
            self._write_queued()
        finally:
            self._writer.close()

    # -- the writer thread --------------------------------------------------------------------

    def _write_batches(self) -> None:
        while not self._closed:
            self._queued.wait()
            if not self._closed:
                time.sleep(GATHER_S)
            self._queued.clear()  # before taking the batch: a record queued after it wakes us
            try:
                self._write_queued()
                self._writer.flush()
            except Exception as exc:  # whatever stops the writer, nothing more is served
                self._failed = True
                log.error("reads journal write failed (%s); refusing to serve", summarize(exc))

    def _write_queued(self) -> None:
        with self._write_lock:
            with self._queue_lock:
                batch, self._queue = self._queue, []
            for index, queued in enumerate(batch):
                try:
                    self._writer.append("read", self._body(queued))
                except Exception as exc:  # counted here, raised to the writer thread's handler
                    self._failed = True
                    lost = len(batch) - index
                    log.error("reads journal lost %d record(s): %s", lost, type(exc).__name__)
                    raise

    def _body(self, queued: _Queued) -> dict[str, object]:
        body: dict[str, object] = {
            "origin": self.origin,
            "roots": list(self.roots),
            "tool": queued.tool,
            "args": bounded_args(
                queued.args, queued.is_private, hide_paths=queued.refused == "private"
            ),
            "bytes": queued.served_bytes,
            "denied": queued.refused is not None,
            "reason": queued.refused,
        }
        if queued.extra:
            body.update(queued.extra)
        if queued.client is not None:
            body["client"] = {
                "id": bounded_text(queued.client.client_id),
                "name": bounded_text(queued.client.name),
            }
        return body


def bounded_args(
    args: Mapping[str, Any], is_private: IsPrivate, *, hide_paths: bool
) -> dict[str, object]:
    """The arguments as recorded: always serialisable, and within the record size limit
    whatever the client sent (a value that fails either would cost the records queued with it
    and close the journal for good)."""
    out: dict[str, object] = {}
    for key, value in list(args.items())[:MAX_ITEMS]:
        if key in PATH_KEYS:
            bounded = _path_value(value, is_private, hide_paths, nested=False)
        else:
            bounded = _bounded(value, nested=False)
        if len(json.dumps(bounded)) > MAX_VALUE_BYTES:
            bounded = f"<{type(value).__name__} over {MAX_VALUE_BYTES} bytes>"
        out[bounded_text(str(key))] = bounded
    return out


def _path_value(value: object, is_private: IsPrivate, hide: bool, *, nested: bool) -> object:
    if isinstance(value, list) and not nested:
        return [_path_value(v, is_private, hide, nested=True) for v in value[:MAX_ITEMS]]
    if not isinstance(value, str):
        return _bounded(value, nested=nested)
    if hide or is_private(value):
        return PRIVATE
    # A client that knows a secret in a name may send the name spelled out: the server refuses
    # it, and the journal keeps it as the server shows it, with the marker.
    return bounded_text(masked_path(value[:MAX_VALUE_BYTES]))


def _bounded(value: object, *, nested: bool) -> object:
    """A scalar as it is (bounded), one level of list; anything deeper only by its type."""
    if isinstance(value, str):
        return bounded_text(value)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return value if -MAX_INT < value < MAX_INT else bounded_text(str(value))
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)  # JSON has no NaN or infinity
    if isinstance(value, list) and not nested:
        return [_bounded(v, nested=True) for v in value[:MAX_ITEMS]]
    return f"<{type(value).__name__}>"


def bounded_text(text: str) -> str:
    return shorten(text, MAX_STRING + 1)
