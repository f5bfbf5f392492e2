"""The gateway's ``oauth_check`` must not turn to "does not stand" while the revocation notice
keeps its value -- not even when the write that goes with the change fails (a journal or the
client book on a full disk): the HTTP server would go on reusing its remembered "stands".

In process: a real GatewayCore on a real vault (as ``test_core_use_cases``), its real
authorization server and notice, and the HTTP server's real ``StandingChecks`` asking it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import jwt
import pytest

from safeport.action_gateway.core.gateway_core import GatewayCore
from safeport.action_gateway.remote_clients.client_book import Approval, RemoteClient
from safeport.action_gateway.remote_clients.token_ledger import Binding
from safeport.context_server.http.standing import StandingChecks
from safeport.errors import EnvironmentProblem, Error, JournalUnavailable
from safeport.shared.paths import SafeportPaths
from safeport.shared.schemas.oauth_wire import AccessClaims, OAuthCheck, OAuthCheckResult
from tests.action_gateway.in_process_core import in_process_core
from tests.vault.vault_factory import passphrase

ISSUER = "https://tunnel.example.net"
REDIRECT = "https://client.example/cb"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[tuple[GatewayCore, SafeportPaths]]:
    core, paths = in_process_core(tmp_path)
    core.prove_passphrase(passphrase())  # unlocked
    try:
        yield core, paths
    finally:
        with contextlib.suppress(Error):
            core.lock("test over")
        core.close()


def approved_token(core: GatewayCore) -> AccessClaims:
    """A client approved and holding an access token, as after the card and the code grant."""
    issuer = core.remote._issuer
    book = issuer.book()
    book.register(RemoteClient("sp-client", "Client", "registered", (REDIRECT,), 0.0))
    book.approve("sp-client", Approval(REDIRECT, ("docs",), "reader", 0.0))
    binding = Binding("sp-client", "Client", f"{ISSUER}/mcp", ISSUER, ("docs",), "reader")
    code = issuer.ledger.new_code(binding, REDIRECT, "x" * 43)
    family = issuer.ledger.redeem_code(code, lambda record: None).family
    assert family is not None
    access = issuer.issue(family).access_token
    return AccessClaims.model_validate(jwt.decode(access, options={"verify_signature": False}))


def http_server_checks(core: GatewayCore, paths: SafeportPaths) -> StandingChecks:
    async def ask(client_id: str, token_id: str) -> OAuthCheckResult:
        message = OAuthCheck(
            v=1, id="t", type="oauth_check", client_id=client_id, token_id=token_id
        )
        return core.remote.check(message)

    return StandingChecks(ask, paths.revocation_notice, os.geteuid())


def gateway_says(core: GatewayCore, claims: AccessClaims) -> bool:
    message = OAuthCheck(v=1, id="t", type="oauth_check", client_id=claims.sub, token_id=claims.jti)
    return core.remote.check(message).active


@pytest.mark.anyio
async def test_a_lock_whose_journal_write_fails_still_stops_remembered_tokens(
    gateway: tuple[GatewayCore, SafeportPaths], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`sp vault lock` (or the idle lock) while the sessions journal cannot be written (disk
    full, EIO): the core's own on_lock callback raises before the authorization server's runs,
    so the ledger is not forgotten and the notice is not replaced. The vault is locked all the
    same and the gateway answers "does not stand"; the HTTP server keeps serving."""
    core, paths = gateway
    claims = approved_token(core)
    checks = http_server_checks(core, paths)
    assert (await checks.check(claims)).active  # asked and remembered

    def journal_fails(kind: str, body: dict[str, object], **ref: object) -> None:
        raise JournalUnavailable("journal sessions.jsonl: No space left on device")

    monkeypatch.setattr(core._journals.sessions, "record", journal_fails)
    with pytest.raises(JournalUnavailable):
        core.lock("idle")
    assert not core.vault_unlocked
    assert not gateway_says(core, claims)  # the gateway: "the vault is locked"
    assert not (await checks.check(claims)).active  # the HTTP server: served (200)


@pytest.mark.anyio
async def test_a_revoke_whose_book_write_fails_still_stops_remembered_tokens(
    gateway: tuple[GatewayCore, SafeportPaths], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`sp context clients revoke` while the client book cannot be written: the book is revoked
    in memory (the gateway refuses the token) but the error comes before the ledger's revoke,
    which is where the notice is replaced. A retry fails the same way for as long as the disk
    does: the HTTP server's answer is what it remembered, refreshed by nothing."""
    core, paths = gateway
    claims = approved_token(core)
    checks = http_server_checks(core, paths)
    assert (await checks.check(claims)).active

    book = core.remote._issuer.book()

    def save_fails() -> None:
        raise EnvironmentProblem("cannot write remote_clients.json: No space left on device")

    monkeypatch.setattr(book, "_save", save_fails)
    with pytest.raises(EnvironmentProblem):
        core.remote.revoke_client("sp-client", by="test")
    assert not gateway_says(core, claims)  # the gateway: "client revoked or unknown"
    assert not (await checks.check(claims)).active  # the HTTP server: served (200)
