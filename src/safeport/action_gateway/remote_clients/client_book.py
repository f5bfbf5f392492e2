"""The remote clients the gateway knows: registered or approved, revoked, and when last used.

Kept in ``remote_clients.json`` in the gateway's data folder (0600, replaced atomically), with
an HMAC-SHA256 over its content under a key derived from the signing key in the vault: whoever
can write the file but not open the vault cannot add an approval or lift a revocation. A file
whose MAC does not match is not trusted at all (every client is asked about again) and the
gateway journals an alarm. Read and written only while the vault is unlocked.
"""

from __future__ import annotations

import hmac
import json
import threading
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Literal

from safeport.vault import replace_atomically

Source = Literal["metadata-document", "registered"]
MAX_CLIENTS = 256
LAST_USE_WRITE_S = 60.0


@dataclass(frozen=True)
class RemoteClient:
    client_id: str
    name: str
    source: Source
    redirect_uris: tuple[str, ...]
    registered_at: float


@dataclass(frozen=True)
class Approval:
    """What the human approved a client for: one redirect URI, these roots, this profile."""

    redirect_uri: str
    roots: tuple[str, ...]
    profile: str
    approved_at: float


@dataclass(frozen=True)
class ClientState:
    client: RemoteClient
    approvals: tuple[Approval, ...] = ()
    revoked_at: float | None = None
    last_used: float | None = None

    def approved_for(self, redirect_uri: str, roots: tuple[str, ...], profile: str) -> bool:
        return self.revoked_at is None and any(
            a.redirect_uri == redirect_uri and a.roots == roots and a.profile == profile
            for a in self.approvals
        )


class ClientBook:
    def __init__(self, path: Path, mac_key: bytes) -> None:
        self._path = path
        self._key = mac_key
        self._lock = threading.Lock()
        self._written_at = 0.0
        self.tampered = False
        self._clients: dict[str, ClientState] = self._load()

    def get(self, client_id: str) -> ClientState | None:
        with self._lock:
            return self._clients.get(client_id)

    def all(self) -> list[ClientState]:
        with self._lock:
            return sorted(self._clients.values(), key=lambda s: s.client.registered_at)

    def register(self, client: RemoteClient) -> ClientState:
        """Add or refresh a client (its metadata document may have changed); approvals and a
        revocation stay as they were."""
        with self._lock:
            old = self._clients.get(client.client_id)
            if old is None and len(self._clients) >= MAX_CLIENTS:
                self._drop_one_unapproved()
            state = replace(old, client=client) if old else ClientState(client)
            self._clients[client.client_id] = state
            self._save()
            return state

    def approve(self, client_id: str, approval: Approval) -> None:
        with self._lock:
            state = self._clients[client_id]
            kept = tuple(a for a in state.approvals if a.redirect_uri != approval.redirect_uri)
            # A new approval after a revocation lets the client back in (its old tokens stay dead).
            approvals = (*kept, approval)[-8:]
            self._clients[client_id] = replace(state, approvals=approvals, revoked_at=None)
            self._save()

    def revoke(self, client_id: str, now: float) -> bool:
        with self._lock:
            state = self._clients.get(client_id)
            if state is None:
                return False
            self._clients[client_id] = replace(state, revoked_at=now, approvals=())
            self._save()
            return True

    def used(self, client_id: str, now: float) -> None:
        """Note a use; written at most once a minute (a read must not cost a disk write)."""
        with self._lock:
            state = self._clients.get(client_id)
            if state is None:
                return
            self._clients[client_id] = replace(state, last_used=now)
            if now - self._written_at >= LAST_USE_WRITE_S:
                self._written_at = now
                self._save()

    # -- the file -----------------------------------------------------------------------------

    def _load(self) -> dict[str, ClientState]:
        try:
            raw = json.loads(self._path.read_bytes())
            body = json.dumps(raw["clients"], sort_keys=True).encode()
            if not hmac.compare_digest(raw["mac"], self._mac(body)):
                self.tampered = True
                return {}
            return {item["client"]["client_id"]: _state(item) for item in raw["clients"]}
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, KeyError, TypeError):
            self.tampered = True
            return {}

    def _save(self) -> None:
        items = [asdict(state) for state in self._clients.values()]
        body = json.dumps(items, sort_keys=True).encode()
        data = json.dumps({"clients": items, "mac": self._mac(body)}, sort_keys=True)
        replace_atomically(self._path, data.encode(), mode=0o600)

    def _mac(self, body: bytes) -> str:
        return hmac.new(self._key, body, "sha256").hexdigest()

    def _drop_one_unapproved(self) -> None:
        for client_id, state in sorted(self._clients.items(), key=lambda i: i[1].last_used or 0):
            if not state.approvals:
                del self._clients[client_id]
                return
        raise ValueError("too many remote clients are registered")


def _state(item: dict[str, object]) -> ClientState:
    client = dict(item["client"])  # type: ignore[call-overload]
    approvals = item.get("approvals") or []
    assert isinstance(approvals, list)
    return ClientState(
        client=RemoteClient(
            client_id=str(client["client_id"]),
            name=str(client["name"]),
            source="registered" if client["source"] == "registered" else "metadata-document",
            redirect_uris=tuple(str(u) for u in client["redirect_uris"]),
            registered_at=float(client["registered_at"]),
        ),
        approvals=tuple(
            Approval(
                redirect_uri=str(a["redirect_uri"]),
                roots=tuple(str(r) for r in a["roots"]),
                profile=str(a["profile"]),
                approved_at=float(a["approved_at"]),
            )
            for a in approvals
        ),
        revoked_at=_float_or_none(item.get("revoked_at")),
        last_used=_float_or_none(item.get("last_used")),
    )


def _float_or_none(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None
