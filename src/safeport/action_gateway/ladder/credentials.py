"""Where an action's credential comes from: the local vault, an OAuth grant the vault holds,
or an OpenBao/Vault server.

An OAuth grant's action runs with an access token from the grant broker
(:mod:`safeport.action_gateway.oauth.broker`), refreshed once after a 401; its card names the
scopes granted, and a dead or unconnected grant gets no card.

A server's credential is checked before the card (:meth:`CredentialSupply.check_before_card`:
sealed, unreachable, slow, login refused, certificate off the pin: the proposal is refused and
nothing falls back to another source), fetched after approval and the intent record
(:meth:`held`), used for the one action, wiped, and its lease revoked. Where each value came
from (server, path or role, version, certificate serial, TTL) is in the action's outcome
record; every lease, its TTL and its revocation has records of its own
(``credential.issued`` before the action, ``credential.revoked`` or
``credential.revoke_failed`` after), never a value. A lease still open when the gateway dies
stays in the pending-leases file; the next unlock revokes it (:meth:`settle`) or raises an
alarm that `sp status` shows.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Protocol

from safeport.action_gateway.approvals.cards import ActionRequest
from safeport.action_gateway.evidence.alarms import JournalEvidence
from safeport.action_gateway.evidence.journals import GatewayJournals
from safeport.action_gateway.executors.interface import ActionError, SshAction
from safeport.action_gateway.executors.openbao.issue import Issued
from safeport.action_gateway.executors.openbao.sources import SourceFinding
from safeport.action_gateway.ladder.credential_texts import credential_texts
from safeport.action_gateway.ladder.grant_card import grant_line
from safeport.action_gateway.ladder.pending_leases import PendingLeases
from safeport.action_gateway.ladder.refusal import Refusal, Rung
from safeport.action_gateway.ladder.resolve import Resolved
from safeport.action_gateway.oauth.broker import Access, GrantBroker, GrantClient
from safeport.action_gateway.oauth.flows import FlowBook
from safeport.action_gateway.policy.store import ServedPolicy
from safeport.errors import Error
from safeport.shared.audit import JournalBody, JournalHead
from safeport.shared.exception_summary import summarize
from safeport.shared.paths import SafeportPaths
from safeport.shared.schemas.config import GatewayPolicy
from safeport.shared.schemas.config_sources import LOCAL_SOURCE
from safeport.shared.schemas.results import SourceCheck
from safeport.vault.interface import UnlockedVault
from safeport.vault.secrets import CredentialSecret, OAuthSecret, SecretBytes, TokenSecret

log = logging.getLogger("safeport.gateway")
SecretIdReader = Callable[[str], TokenSecret]
# The provider client for an oauth credential of the policy (built from its [oauth] table).
GrantClients = Callable[[GatewayPolicy, str], GrantClient]


class CredentialSources(Protocol):
    """The servers' side (``executors.openbao.sources.OpenBaoSources`` is one)."""

    def check(
        self, policy: GatewayPolicy, credential_id: str, secret_id: SecretIdReader
    ) -> None: ...

    def issue(
        self,
        policy: GatewayPolicy,
        credential_id: str,
        ssh_user: str | None,
        secret_id: SecretIdReader,
    ) -> Issued: ...

    def revoke(
        self, policy: GatewayPolicy, server_id: str, lease_id: str, secret_id: SecretIdReader
    ) -> None: ...

    def doctor(self, policy: GatewayPolicy, secret_id: SecretIdReader) -> list[SourceFinding]: ...

    def forget(self) -> None: ...


class Journal(Protocol):
    def record(
        self, kind: str, body: JournalBody, *, ref: dict[str, int] | None = None
    ) -> JournalHead: ...


Alarm = Callable[[str, JournalBody], None]


class CredentialSupply:
    def __init__(
        self,
        sources: CredentialSources,
        journals: GatewayJournals | None,
        evidence: JournalEvidence | None,
        paths: SafeportPaths | None,
        *,
        grant_clients: GrantClients | None = None,
    ) -> None:
        """Journals ``credential.*`` records in the actions journal, alarms through
        ``evidence``, keeps open leases in the data folder's ``leases.json``; an oauth
        credential's access tokens are the broker's (``oauth.*`` records)."""
        self.sources = sources
        self.journal: Journal = journals.actions if journals is not None else _NoJournal()
        self.grants = GrantBroker(self.journal)
        self.flows = FlowBook()  # connects under way (`sp oauth connect`)
        self.grant_clients = grant_clients or _no_grant_client
        self._alarm: Alarm = evidence.alarm if evidence is not None else _no_alarm
        self._pending = PendingLeases(paths.data_dir / "leases.json" if paths else None)

    def check_before_card(self, resolved: Resolved, vault: UnlockedVault) -> Resolved:
        """Raise the :class:`Refusal` (no card) when the credential's server cannot serve it
        now, or its OAuth grant is dead or not connected; an OAuth grant's card names the
        scopes it was granted."""
        policy, credential_id = resolved.policy, resolved.request.credential
        credential = policy.credentials[credential_id]
        if credential.kind == "oauth":
            line = grant_line(credential_id, vault, self.grants.dead())
            request = dataclasses.replace(resolved.request, grant_line=line)
            return dataclasses.replace(resolved, request=request)
        if credential.source == LOCAL_SOURCE:
            return resolved
        try:
            self.sources.check(policy, credential_id, _reader(vault))
        except ActionError as exc:
            raise Refusal(exc.code, Rung.VAULT, exc.failure, exc.message) from exc
        return resolved

    @contextlib.contextmanager
    def held(
        self, policy: GatewayPolicy, request: ActionRequest, vault: UnlockedVault, intent: int
    ) -> Iterator[Held]:
        """The credential for this one action; wiped and its lease revoked when the block ends.

        Where a server's value came from goes into the action's outcome record (``origin``);
        a lease has a record of its own before the action runs, so a crash leaves it on record."""
        credential = policy.credentials[request.credential]
        if credential.source == LOCAL_SOURCE:
            secret = vault.secret(request.credential)
            if isinstance(secret, OAuthSecret):
                with self._granted(policy, request.credential, secret, vault) as held:
                    yield held
                return
            yield Held(secret, {})
            return
        action = request.prepared
        user = action.host.user if isinstance(action, SshAction) else None
        issued = self.sources.issue(policy, request.credential, user, _reader(vault))
        try:
            if issued.lease_id is not None:
                self._pending.add(credential.source, issued.lease_id)
                body = {"request_id": request.request_id, **issued.record}
                body["lease_id"] = issued.lease_id
                self.journal.record("credential.issued", body, ref={"intent": intent})
                _check_lease_ttl(credential.source, issued, credential.ttl_s)
            yield Held(issued.secret, issued.record)
        finally:
            issued.secret.wipe()
            if issued.lease_id is not None:
                self._revoke(policy, vault, credential.source, issued.lease_id, intent)

    @contextlib.contextmanager
    def _granted(
        self, policy: GatewayPolicy, name: str, stored: OAuthSecret, vault: UnlockedVault
    ) -> Iterator[Held]:
        """An access token of the grant ``name``; ``renew`` (after a 401) refreshes it once.
        The grant's own secrets are withheld from the result like the access token."""
        try:
            withheld = [text for value in _grant_values(stored) for text in _texts(value)]
        finally:
            stored.wipe()
        client = self.grant_clients(policy, name)
        leases = [self.grants.access(name, client, vault)]

        def renew() -> TokenSecret:
            if len(leases) > 1:
                raise Error("an action's access token is renewed at most once")
            leases.append(self.grants.after_unauthorized(name, client, vault, leases[0]))
            withheld.extend(credential_texts(leases[-1].secret))
            return leases[-1].secret

        try:
            yield Held(leases[0].secret, {}, renew=renew, withheld=withheld)
        finally:
            _wipe_leases(leases)

    def settle(self, served: ServedPolicy | None, vault: UnlockedVault) -> None:
        """Revoke the leases a previous run left open, in a thread of its own (an unlock must
        not wait on a server's timeouts); alarm for each that cannot be."""
        if not self._pending.entries():
            return
        policy = served.policy if served is not None else None
        threading.Thread(
            target=self._settle, args=(policy, vault), name="sp-leases", daemon=True
        ).start()

    def _settle(self, policy: GatewayPolicy | None, vault: UnlockedVault) -> None:
        try:
            for server_id, lease_id in self._pending.entries():
                if policy is None or server_id not in policy.sources.openbao:
                    self._failed(server_id, lease_id, "its server is no longer declared", None)
                    self._pending.remove(lease_id)
                    continue
                if not lease_id.startswith(_lease_prefixes(policy, server_id)):
                    # Not one the gateway issues: a line written into the file by someone else,
                    # which the gateway's token might otherwise revoke for them.
                    reason = "it is no lease of a declared credential of that server"
                    self._failed(server_id, lease_id, reason, None)
                    self._pending.remove(lease_id)
                    continue
                self._revoke(policy, vault, server_id, lease_id, None, at_start=True)
        except Exception as exc:  # a journal closed by a stop meanwhile: the file keeps them
            log.error("open leases were not settled: %s", summarize(exc))

    def _revoke(
        self,
        policy: GatewayPolicy,
        vault: UnlockedVault,
        server_id: str,
        lease_id: str,
        intent: int | None,
        *,
        at_start: bool = False,
    ) -> None:
        ref = None if intent is None else {"intent": intent}
        try:
            self.sources.revoke(policy, server_id, lease_id, _reader(vault))
        except (ActionError, Error) as exc:
            self._failed(server_id, lease_id, exc.message, ref)
            return
        self._pending.remove(lease_id)
        body = {"source": server_id, "lease_id": lease_id, "after_restart": at_start}
        self.journal.record("credential.revoked", body, ref=ref)

    def _failed(
        self, server_id: str, lease_id: str, reason: str, ref: dict[str, int] | None
    ) -> None:
        log.error("lease %s of %s was not revoked: %s", lease_id, server_id, reason)
        body: dict[str, object] = {"source": server_id, "lease_id": lease_id, "reason": reason}
        self.journal.record("credential.revoke_failed", body, ref=ref)
        self._alarm("credential.revoke_failed", {"alarm": True, **body})

    def doctor(self, served: ServedPolicy | None, vault: UnlockedVault) -> list[SourceCheck]:
        """`sp doctor`'s lines for the servers and each declared path (no value is read)."""
        if served is None:
            return []
        found = self.sources.doctor(served.policy, _reader(vault))
        return [SourceCheck(**dataclasses.asdict(finding)) for finding in found]


@dataclasses.dataclass(frozen=True)
class Held:
    """The credential an action runs with, and where it came from (empty: the local vault)."""

    secret: CredentialSecret
    origin: dict[str, object]
    # An OAuth grant's: a new access token after the service refused this one (401), once.
    renew: Callable[[], TokenSecret] | None = None
    # Texts the result must not hold besides the credential's own (the grant's refresh token
    # and client secret, a renewed access token).
    withheld: list[str] = dataclasses.field(default_factory=list)


def local_only() -> CredentialSupply:
    """A supply with no server client (unit tests): a server's credential is refused, never
    replaced by the local vault's."""
    return CredentialSupply(_NoServers(), None, None, None)


class _NoServers:
    def check(self, policy: GatewayPolicy, credential_id: str, secret_id: SecretIdReader) -> None:
        raise ActionError("source_unreachable", "this gateway has no OpenBao client")

    def issue(
        self,
        policy: GatewayPolicy,
        credential_id: str,
        ssh_user: str | None,
        secret_id: SecretIdReader,
    ) -> Issued:
        raise ActionError("source_unreachable", "this gateway has no OpenBao client")

    def revoke(
        self, policy: GatewayPolicy, server_id: str, lease_id: str, secret_id: SecretIdReader
    ) -> None:
        raise ActionError("source_unreachable", "this gateway has no OpenBao client")

    def doctor(self, policy: GatewayPolicy, secret_id: SecretIdReader) -> list[SourceFinding]:
        return []

    def forget(self) -> None:
        return


def _check_lease_ttl(server_id: str, issued: Issued, ttl_s: int) -> None:
    """Refuse (the lease is then revoked unused) a lease the server gave for longer than the
    policy's ``ttl_s``: the role's own default, not the policy, would bound a lease a crash
    left unrevoked."""
    lease_ttl = issued.record.get("lease_ttl_s")
    if not isinstance(lease_ttl, int) or lease_ttl > ttl_s:
        raise ActionError(
            "source_refused",
            f"OpenBao server {server_id!r} issued a lease of {lease_ttl} s, longer than the "
            f"credential's ttl_s ({ttl_s} s); it was revoked unused",
            hint="set the database role's default_ttl to at most ttl_s",
        )


def _lease_prefixes(policy: GatewayPolicy, server_id: str) -> tuple[str, ...]:
    """How the ids of the leases the gateway takes from ``server_id`` begin (its database
    roles': ``MOUNT/creds/ROLE/``)."""
    return tuple(
        f"{credential.database_mount}/creds/{credential.database_role}/"
        for credential in policy.credentials.values()
        if credential.source == server_id and credential.database_role is not None
    )


def _no_grant_client(policy: GatewayPolicy, name: str) -> GrantClient:
    raise ActionError("auth_failed", "this gateway has no OAuth client")


def _grant_values(stored: OAuthSecret) -> list[SecretBytes]:
    values = (stored.refresh_token, stored.access_token, stored.client_secret)
    return [value for value in values if value is not None]


def _texts(value: SecretBytes) -> list[str]:
    return credential_texts(TokenSecret(value))


def _wipe_leases(leases: list[Access]) -> None:
    for lease in leases:
        lease.secret.wipe()


def _no_alarm(kind: str, body: dict[str, object]) -> None:
    return


class _NoJournal:
    def record(
        self, kind: str, body: dict[str, object], *, ref: dict[str, int] | None = None
    ) -> JournalHead:
        raise Error("no journal")


def _reader(vault: UnlockedVault) -> SecretIdReader:
    def read(name: str) -> TokenSecret:
        secret = vault.secret(name)
        if not isinstance(secret, TokenSecret):
            raise ActionError("source_auth", f"credential {name!r} is not a token")
        return secret

    return read
