"""The gateway's OAuth client and grant broker against the real authorization server
(harness/real_oidc.py) and a real vault: grants connected by the code flow with PKCE and by the
device flow, twenty actions at once on an expiring token cause one refresh, a rotated refresh
token someone else spent first kills the grant (reported, never retried), a grant the human
revoked fails with the remedy named, and no token reaches a journal or an error."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest

from harness.oidc_browser import Browser
from harness.real_oidc import CONFIDENTIAL_CLIENT, PUBLIC_CLIENT, OidcProvider
from safeport.action_gateway.executors.interface import ActionError
from safeport.action_gateway.oauth.broker import REFRESH_BEFORE_S, Access, GrantBroker
from safeport.action_gateway.oauth.client import OAuthClient
from safeport.action_gateway.oauth.errors import OAuthRefused
from safeport.action_gateway.oauth.protocol import DevicePending, TokenGrant
from safeport.action_gateway.oauth.transport import OAuthHttp
from safeport.shared.audit import JournalBody, JournalHead
from safeport.shared.schemas.config_oauth import OAuthGrantSpec
from safeport.vault import OpenVault
from safeport.vault.secrets import OAuthSecret, SecretBytes
from tests.vault.vault_factory import make_vault

CALLBACK = "http://127.0.0.1:48214/callback"  # never listened on: the browser stops before it
NAME = "tracker"


class _Journal:
    """The actions journal as the broker writes it, kept as the JSON it would be on disk."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._lock = threading.Lock()

    def record(
        self, kind: str, body: JournalBody, *, ref: dict[str, int] | None = None
    ) -> JournalHead:
        with self._lock:
            self.lines.append(json.dumps({"kind": kind, "body": body}, default=str))
            return JournalHead(seq=len(self.lines), hash="0" * 64)

    def kinds(self) -> list[str]:
        return [json.loads(line)["kind"] for line in self.lines]


class _Clock:
    def __init__(self) -> None:
        self.now = time.monotonic()

    def __call__(self) -> float:
        return self.now


def _client(provider: OidcProvider, *, confidential: bool = False) -> OAuthClient:
    table: dict[str, object] = {
        "issuer": provider.issuer,
        "client_id": CONFIDENTIAL_CLIENT if confidential else PUBLIC_CLIENT,
        "client_auth": "client_secret_basic" if confidential else "none",
        "scopes": ["openid", "profile"],
        "ca_file": str(provider.ca_file),
        "allow_private_addresses": True,
        "timeout_s": 5,
    }
    spec = OAuthGrantSpec.model_validate(table)
    return OAuthClient(spec, OAuthHttp(spec.ca_file, spec.timeout_s, spec.max_response_bytes,
                                       allow_private=True))  # fmt: skip


def _connect_by_code(
    provider: OidcProvider, client: OAuthClient, account: str, secret: SecretBytes | None = None
) -> TokenGrant:
    flow = client.begin_code(CALLBACK)
    with Browser(provider.ca_file, account) as browser:
        final = browser.authorize(flow.url, CALLBACK.rsplit("/", 1)[0])
    return client.exchange_code(flow, parse_qsl(urlsplit(final).query), secret)


def _store(vault: OpenVault, grant: TokenGrant, issuer: str) -> None:
    assert grant.refresh_token is not None and grant.scopes is not None
    value: dict[str, SecretBytes | str] = {
        "refresh_token": grant.refresh_token,
        "scopes": " ".join(grant.scopes),
        "issuer": issuer,
    }
    vault.add(NAME, "oauth", value)


def _stored_refresh(vault: OpenVault) -> bytes:
    secret = vault.secret(NAME)
    assert isinstance(secret, OAuthSecret) and secret.refresh_token is not None
    return secret.refresh_token.reveal()


def _whoami(provider: OidcProvider, token: bytes) -> int:
    with provider.client() as http:
        answer = http.get(
            provider.resource_url, headers={"Authorization": f"Bearer {token.decode()}"}
        )
    return answer.status_code


def _at_once(count: int, work: Callable[[], object]) -> list[object]:
    barrier = threading.Barrier(count)
    results: list[object] = [None] * count

    def run(index: int) -> None:
        barrier.wait(timeout=20)
        try:
            results[index] = work()
        except Exception as exc:
            results[index] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)
    return results


@pytest.fixture
def vault(tmp_path: Path) -> Iterator[OpenVault]:
    _, opened = make_vault(tmp_path)
    yield opened


@pytest.fixture
def seen() -> list[bytes]:
    """Every token value a test met: none may appear in a journal or an error."""
    return []


def _issued(provider: OidcProvider) -> list[bytes]:
    return [value.encode() for value in provider.issued()]


def _assert_never_said(texts: list[str], seen: list[bytes]) -> None:
    joined = "\n".join(texts)
    for token in seen:
        assert token.decode() not in joined


def _dead(call: Callable[[], object]) -> ActionError:
    with pytest.raises(ActionError) as caught:
        call()
    assert caught.value.failure == "oauth_grant_dead", caught.value.message
    assert f"sp oauth connect {NAME}" in caught.value.message
    return caught.value


def test_a_code_flow_grant_serves_twenty_actions_with_one_refresh(
    oidc_provider: OidcProvider, vault: OpenVault, seen: list[bytes]
) -> None:
    client, journal, clock = _client(oidc_provider), _Journal(), _Clock()
    grant = _connect_by_code(oidc_provider, client, "grace")
    assert grant.scopes is not None and set(grant.scopes) == {"openid", "profile"}
    assert grant.refresh_token is not None
    seen += [grant.access_token.reveal(), grant.refresh_token.reveal()]
    _store(vault, grant, oidc_provider.issuer)
    broker = GrantBroker(journal, clock=clock)
    first = broker.access(NAME, client, vault)
    seen += [first.secret.token.reveal(), _stored_refresh(vault)]
    assert _whoami(oidc_provider, first.secret.token.reveal()) == 200
    # The cached token nears its expiry while twenty actions want it: one refresh serves all.
    before = len(oidc_provider.token_requests("refresh_token"))
    clock.now += 3600 - REFRESH_BEFORE_S
    results = _at_once(20, lambda: broker.access(NAME, client, vault))
    assert not [r for r in results if not isinstance(r, Access)], results
    refreshes = oidc_provider.token_requests("refresh_token")[before:]
    assert [r["status"] for r in refreshes] == [200]
    tokens = {r.secret.token.reveal() for r in results if isinstance(r, Access)}
    assert len(tokens) == 1 and tokens != {first.secret.token.reveal()}
    seen += [*tokens, _stored_refresh(vault)]
    assert _whoami(oidc_provider, next(iter(tokens))) == 200
    assert journal.kinds() == ["oauth.refreshed", "oauth.refreshed"]
    assert all(json.loads(line)["body"]["rotated"] is True for line in journal.lines)
    _assert_never_said(journal.lines, [*seen, *_issued(oidc_provider)])


def test_twenty_actions_refused_by_the_service_cause_one_refresh(
    oidc_provider: OidcProvider, vault: OpenVault
) -> None:
    client = _client(oidc_provider)
    _store(vault, _connect_by_code(oidc_provider, client, "heidi"), oidc_provider.issuer)
    broker = GrantBroker(_Journal())
    used = broker.access(NAME, client, vault)
    # The access token ends early at the provider: the service answers 401 to every action.
    assert oidc_provider.drop_access_token(used.secret.token.reveal().decode())
    assert _whoami(oidc_provider, used.secret.token.reveal()) == 401
    before = len(oidc_provider.token_requests("refresh_token"))
    results = _at_once(20, lambda: broker.after_unauthorized(NAME, client, vault, used))
    assert [r["status"] for r in oidc_provider.token_requests("refresh_token")[before:]] == [200]
    tokens = {r.secret.token.reveal() for r in results if isinstance(r, Access)}
    assert len(tokens) == 1 and _whoami(oidc_provider, next(iter(tokens))) == 200


def test_a_refresh_token_someone_else_spent_first_kills_the_grant_once(
    oidc_provider: OidcProvider, vault: OpenVault, seen: list[bytes]
) -> None:
    client, journal, clock = _client(oidc_provider), _Journal(), _Clock()
    _store(vault, _connect_by_code(oidc_provider, client, "ivan"), oidc_provider.issuer)
    broker = GrantBroker(journal, clock=clock)
    broker.access(NAME, client, vault)
    # A copy of the vault's refresh token (a stolen backup) is spent by its thief first.
    stolen = _stored_refresh(vault)
    seen.append(stolen)
    thief = client.refresh(SecretBytes(stolen), None)
    assert thief.refresh_token is not None
    seen += [thief.access_token.reveal(), thief.refresh_token.reveal()]
    before = len(oidc_provider.token_requests("refresh_token"))
    clock.now += 3600
    error = _dead(lambda: broker.access(NAME, client, vault))
    for _ in range(3):  # dead: not asked again, however many actions try
        _dead(lambda: broker.access(NAME, client, vault))
    refreshes = oidc_provider.token_requests("refresh_token")[before:]
    assert [(r["status"], r["error"]) for r in refreshes] == [(400, "invalid_grant")]
    # The provider took the reuse as theft and revoked the grant: the thief's tokens died too.
    assert _whoami(oidc_provider, thief.access_token.reveal()) == 401
    with pytest.raises(OAuthRefused):
        client.refresh(SecretBytes(thief.refresh_token.reveal()), None)
    assert [d.name for d in broker.dead()] == [NAME]
    assert journal.kinds()[-1] == "oauth.grant_dead"
    _assert_never_said(
        [*journal.lines, error.message, repr(error)], [*seen, *_issued(oidc_provider)]
    )


def test_a_grant_the_human_revoked_fails_the_next_action_naming_the_remedy(
    oidc_provider: OidcProvider, vault: OpenVault
) -> None:
    client, clock = _client(oidc_provider), _Clock()
    _store(vault, _connect_by_code(oidc_provider, client, "judy"), oidc_provider.issuer)
    broker = GrantBroker(_Journal(), clock=clock)
    broker.access(NAME, client, vault)
    assert oidc_provider.revoke_account("judy") >= 1
    clock.now += 3600
    _dead(lambda: broker.access(NAME, client, vault))
    broker.connected(NAME)  # a human reconnects: the grant is alive again with its new token
    vault.remove(NAME)
    _store(vault, _connect_by_code(oidc_provider, client, "judy"), oidc_provider.issuer)
    assert _whoami(oidc_provider, broker.access(NAME, client, vault).secret.token.reveal()) == 200
    assert broker.dead() == []


def test_a_device_flow_grant_serves_actions(oidc_provider: OidcProvider, vault: OpenVault) -> None:
    client = _client(oidc_provider)
    device = client.device_start(None)
    assert device.interval == 1 and device.verification_uri.startswith(oidc_provider.issuer)
    first = client.device_poll(device, None)
    assert isinstance(first, DevicePending) and not first.slow_down  # authorization_pending
    # Polled again sooner than the interval, as GitHub's device flow is: told to slow down. (A
    # loaded machine may take a while between two polls; one of a few lands inside a second.)
    answers = []
    for _ in range(5):
        answers.append(client.device_poll(device, None))
        if getattr(answers[-1], "slow_down", False):
            break
    assert answers[-1] == DevicePending(slow_down=True)
    with Browser(oidc_provider.ca_file, "mallory") as browser:
        browser.approve_device(device.verification_uri, device.user_code)
    deadline = time.monotonic() + 15
    interval = device.interval + 1  # the interval the provider gave with its slow_down
    while True:
        time.sleep(interval)
        answer = client.device_poll(device, None)
        if isinstance(answer, TokenGrant):
            break
        interval += 5 if answer.slow_down else 0
        assert time.monotonic() < deadline
    _store(vault, answer, oidc_provider.issuer)
    access = GrantBroker(_Journal()).access(NAME, client, vault)
    assert _whoami(oidc_provider, access.secret.token.reveal()) == 200


def test_a_confidential_client_connects_with_its_secret_only(
    oidc_provider: OidcProvider, vault: OpenVault
) -> None:
    client = _client(oidc_provider, confidential=True)
    with pytest.raises(OAuthRefused):
        _connect_by_code(oidc_provider, client, "niaj", SecretBytes(b"not-the-secret"))
    secret = SecretBytes(oidc_provider.client_secret.encode())
    grant = _connect_by_code(oidc_provider, client, "niaj", secret)
    assert grant.refresh_token is not None
    value: dict[str, SecretBytes | str] = {
        "refresh_token": grant.refresh_token,
        "client_secret": SecretBytes(oidc_provider.client_secret.encode()),
        "scopes": "openid profile",
        "issuer": oidc_provider.issuer,
    }
    vault.add(NAME, "oauth", value)
    access = GrantBroker(_Journal()).access(NAME, client, vault)
    assert _whoami(oidc_provider, access.secret.token.reveal()) == 200
    assert client.revoke(SecretBytes(_stored_refresh(vault)), "refresh_token", secret)
    with pytest.raises(OAuthRefused):
        client.refresh(SecretBytes(_stored_refresh(vault)), secret)
