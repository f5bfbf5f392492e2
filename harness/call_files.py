"""An executor stub for the crash drill: each call leaves its own file, written before it returns.

A call file holds the prepared action's digest (what the intent record's ``prepared_sha256``
names) and how many bytes the actions journal held, over all its segments, when the call began.
The drill checks afterwards that an intent with that digest ends within those bytes: the intent
was written before the executor ran. The byte count is taken under the journal's own lock, so no
append or rotation is half done while it is measured.

Each file is written to a temporary name and renamed, so a kill leaves a whole file or none.
"""

from __future__ import annotations

import fcntl
import itertools
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path

from safeport.action_gateway.executors.interface import HttpAction, SqlAction, SshAction
from safeport.shared.audit import journal_segments
from safeport.shared.schemas.config import GatewayPolicy
from safeport.shared.schemas.wire import HttpResult, SqlResult, SshExecResult
from safeport.vault.secrets import BasicSecret, SshKeySecret, TokenSecret


def journal_bytes(journal: Path) -> int:
    """The bytes of every segment of ``journal``, read while holding the writer's lock file."""
    lock = journal.with_name(f".{journal.name}.lock")
    fd = os.open(lock, os.O_RDWR | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        total = 0
        for segment in journal_segments(journal):
            try:
                total += segment.stat().st_size
            except FileNotFoundError:
                continue  # the active file, between a rotation and its first record
        return total
    finally:
        os.close(fd)  # releases the lock


class CallFileExecutor:
    def __init__(self, folder: Path, actions_journal: Path) -> None:
        self._folder = folder
        self._journal = actions_journal
        self._numbers = itertools.count()
        self._lock = threading.Lock()
        folder.mkdir(mode=0o700, exist_ok=True)

    def _leave_file(self, digest: str, what: str) -> None:
        with self._lock:
            number = next(self._numbers)
        name = f"{os.getpid()}-{number:06d}.json"
        data = json.dumps(
            {"digest": digest, "what": what, "actions_bytes": journal_bytes(self._journal)}
        ).encode()
        tmp = self._folder / f".{name}.tmp"
        tmp.write_bytes(data)
        tmp.rename(self._folder / name)

    def check_before_card(self, action: SshAction | HttpAction | SqlAction) -> None:
        return None  # nothing here resolves or connects

    def ssh_exec(self, action: SshAction, secret: SshKeySecret) -> SshExecResult:
        self._leave_file(action.digest(), action.command_line)
        return SshExecResult(
            exit_status=0,
            stdout="ok\n",
            stderr="",
            stdout_truncated=False,
            stderr_truncated=False,
            duration_ms=0,
        )

    def http_request(self, action: HttpAction, secret: TokenSecret | BasicSecret) -> HttpResult:
        self._leave_file(action.digest(), action.target.url)
        return HttpResult(status=200, fields={"state": "ok"})

    def sql_query(
        self, action: SqlAction, secret: TokenSecret | SshKeySecret | BasicSecret
    ) -> SqlResult:
        self._leave_file(action.digest(), action.query.statement)
        return SqlResult(
            columns=["state"], rows=[["ok"]], row_count=1, truncated=False, duration_ms=0
        )

    def inspect_roles(
        self, policy: GatewayPolicy, secret_of: Callable[[str], object]
    ) -> tuple[list[str], list[str]]:
        return [], []  # no database here to inspect

    def close_all(self) -> None:
        return None


def read_calls(folder: Path) -> list[dict[str, object]]:
    return [json.loads(path.read_bytes()) for path in sorted(folder.glob("[0-9]*.json"))]
