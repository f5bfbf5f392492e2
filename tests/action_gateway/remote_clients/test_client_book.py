"""The book of remote clients on disk: approvals survive a restart, a file edited without the
vault's key is not trusted at all."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

from safeport.action_gateway.remote_clients.client_book import Approval, ClientBook, RemoteClient

KEY = secrets.token_bytes(32)


def _client(client_id: str) -> RemoteClient:
    return RemoteClient(client_id, "Test Client", "registered", ("https://c.example/cb",), 1.0)


def test_approvals_and_revocations_survive_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "remote_clients.json"
    book = ClientBook(path, KEY)
    book.register(_client("sp-a"))
    book.register(_client("sp-b"))
    book.approve("sp-a", Approval("https://c.example/cb", ("docs",), "reader", 2.0))
    book.revoke("sp-b", 3.0)
    again = ClientBook(path, KEY)
    assert not again.tampered
    a, b = again.get("sp-a"), again.get("sp-b")
    assert a is not None and a.approved_for("https://c.example/cb", ("docs",), "reader")
    assert b is not None and b.revoked_at == 3.0
    assert path.stat().st_mode & 0o777 == 0o600


def test_a_file_edited_without_the_key_is_not_trusted(tmp_path: Path) -> None:
    path = tmp_path / "remote_clients.json"
    book = ClientBook(path, KEY)
    book.register(_client("sp-b"))
    book.revoke("sp-b", 3.0)
    # Someone who can write the file lifts the revocation and approves a client of theirs.
    data = json.loads(path.read_text())
    data["clients"][0]["revoked_at"] = None
    data["clients"][0]["approvals"] = [
        {"redirect_uri": "https://evil.example/cb", "roots": ["docs"], "profile": "agent",
         "approved_at": 4.0}
    ]  # fmt: skip
    path.write_text(json.dumps(data))
    forged = ClientBook(path, KEY)
    assert forged.tampered and forged.get("sp-b") is None
    # Another key (another vault) does not trust the genuine file either.
    assert ClientBook(path, secrets.token_bytes(32)).tampered
