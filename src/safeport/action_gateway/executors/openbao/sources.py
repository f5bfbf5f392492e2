"""The declared OpenBao/Vault servers of the accepted policy, as the ladder uses them.

One :class:`~.client.ServerSession` per server, rebuilt when the policy changes the server's
table. Before a card the ladder calls :meth:`OpenBaoSources.check` (sealed, unreachable, slow,
a login refused or a certificate off the pin: refused, no card); after approval
:meth:`OpenBaoSources.issue` fetches the one value the action uses; :meth:`revoke` ends a
lease. :meth:`doctor` asks the server what the gateway may do on each declared path
(``sys/capabilities-self``) without reading any value.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from safeport.action_gateway.executors.interface import ActionError
from safeport.action_gateway.executors.openbao.client import (
    SecretIdReader,
    ServerSession,
    translate_openbao_errors,
)
from safeport.action_gateway.executors.openbao.issue import (
    Issued,
    read_database_role,
    read_kv,
    sign_ssh_key,
)
from safeport.action_gateway.executors.openbao.issue import revoke_lease as _revoke_lease
from safeport.shared.schemas.config import Credential, GatewayPolicy
from safeport.shared.schemas.config_sources import LOCAL_SOURCE


@dataclass(frozen=True)
class SourceFinding:
    """One line of `sp doctor` about a server or a declared path: ``ok`` or what to fix."""

    name: str
    ok: bool
    detail: str
    fix: str = ""


class OpenBaoSources:
    def __init__(self, trust_owners: frozenset[int] = frozenset({0})) -> None:
        self._trust_owners = trust_owners
        self._sessions: dict[str, ServerSession] = {}
        self._lock = threading.Lock()

    def check(self, policy: GatewayPolicy, credential_id: str, secret_id: SecretIdReader) -> None:
        """Raise the :class:`ActionError` the fetch would meet now, before any card."""
        credential = policy.credentials[credential_id]
        if credential.source != LOCAL_SOURCE:
            self._session(policy, credential.source).logged_in(secret_id)

    def issue(
        self,
        policy: GatewayPolicy,
        credential_id: str,
        ssh_user: str | None,
        secret_id: SecretIdReader,
    ) -> Issued:
        """The credential's value for one action (a KV read, or a key signed for ``ssh_user``)."""
        credential = policy.credentials[credential_id]
        server_id = credential.source
        # Checked before the card (or the session's call): one request fewer per action; a
        # server sealed or a token revoked since then fails the fetch itself.
        session = self._session(policy, server_id)
        client = session.logged_in(secret_id, confirm=False)
        if credential.kind == "ssh-key":
            if ssh_user is None:
                raise ActionError("invalid_target", "an ssh certificate needs the host's user")
            issued = sign_ssh_key(server_id, client, credential, ssh_user)
        elif credential.database_role is not None:
            issued = read_database_role(server_id, client, credential)
        else:
            issued = read_kv(server_id, client, credential)
        session.answered()
        return issued

    def revoke(
        self, policy: GatewayPolicy, server_id: str, lease_id: str, secret_id: SecretIdReader
    ) -> None:
        client = self._session(policy, server_id).logged_in(secret_id)
        _revoke_lease(server_id, client, lease_id)

    def doctor(self, policy: GatewayPolicy, secret_id: SecretIdReader) -> list[SourceFinding]:
        """Each server (seal, login) and each declared path (the gateway's capabilities)."""
        found: list[SourceFinding] = []
        for server_id in sorted(policy.sources.openbao):
            try:
                client = self._session(policy, server_id).logged_in(secret_id)
            except ActionError as exc:
                found.append(
                    SourceFinding(f"openbao {server_id}", False, exc.message, exc.hint or "")
                )
                continue
            found.append(SourceFinding(f"openbao {server_id}", True, "unsealed, logged in"))
            for name, credential in sorted(policy.credentials.items()):
                if credential.source == server_id:
                    found.append(_path_finding(server_id, client, name, credential))
        return found

    def forget(self) -> None:
        """Drop every login (vault lock, gateway stop)."""
        with self._lock:
            sessions = list(self._sessions.values())
            self._sessions.clear()
        for session in sessions:
            session.forget()

    def _session(self, policy: GatewayPolicy, server_id: str) -> ServerSession:
        server = policy.sources.openbao.get(server_id)
        if server is None:
            raise ActionError("invalid_target", f"no OpenBao server {server_id!r} is declared")
        with self._lock:
            session = self._sessions.get(server_id)
            if session is None or session.server != server:
                if session is not None:
                    session.forget()
                session = ServerSession(server_id, server, self._trust_owners)
                self._sessions[server_id] = session
            return session


def needed_path(credential: Credential) -> tuple[str, str]:
    """The API path the gateway uses for ``credential`` and the capability it needs there."""
    if credential.kind == "ssh-key":
        return f"{credential.ssh_mount}/sign/{credential.ssh_role}", "update"
    if credential.database_role is not None:
        return f"{credential.database_mount}/creds/{credential.database_role}", "read"
    return f"{credential.kv_mount}/data/{credential.kv_path}", "read"


def _path_finding(server_id: str, client: Any, name: str, credential: Credential) -> SourceFinding:
    path, needed = needed_path(credential)
    try:
        with translate_openbao_errors(server_id, "the capability check"):
            answer: dict[str, Any] = client.write_data(
                "sys/capabilities-self", data={"paths": [path]}
            )
    except ActionError as exc:
        return SourceFinding(f"credential {name}", False, exc.message, exc.hint or "")
    capabilities = answer.get("data", answer).get(path) or answer.get("capabilities") or []
    if needed in capabilities or "root" in capabilities:
        return SourceFinding(f"credential {name}", True, f"{server_id}: {path} ({needed})")
    return SourceFinding(
        f"credential {name}",
        False,
        f"{server_id}: the gateway may not {needed} {path}",
        f'grant the gateway\'s policy `path "{path}" {{ capabilities = ["{needed}"] }}`',
    )
