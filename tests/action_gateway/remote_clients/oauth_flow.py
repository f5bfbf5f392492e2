"""The relay's side of the OAuth messages, as the context server sends them on agent.sock, and
the human's side through control.sock (the approve/deny path `sp approvals` uses)."""

from __future__ import annotations

import base64
import hashlib
import itertools
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

import jwt
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from harness.gateway import AgentProcess, Gateway, decide, wait_card

PUBLIC = "https://tunnel.example.net"
RESOURCE = f"{PUBLIC}/mcp"
REDIRECT = "http://127.0.0.1:33418/callback"
_ids = itertools.count()


@dataclass(frozen=True)
class Pkce:
    verifier: str
    challenge: str


def pkce() -> Pkce:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return Pkce(verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode())


class Relay:
    """A context server's agent.sock connection (a child process, so that the test process can
    approve its cards)."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.agent: AgentProcess = gateway.spawn_agent()

    def ask(self, kind: str, **fields: Any) -> dict[str, Any]:
        reply = self.agent.call({"v": 1, "id": f"o{next(_ids)}", "type": kind, **fields}, 40)
        return dict(reply)

    def result(self, kind: str, **fields: Any) -> dict[str, Any]:
        reply = self.ask(kind, **fields)
        assert reply["ok"], reply
        return dict(reply["result"])

    def register(self, **metadata: Any) -> dict[str, Any]:
        body = {"redirect_uris": [REDIRECT], "client_name": "Test Client", **metadata}
        return self.result("oauth_register", public_url=PUBLIC, client_metadata=body)

    def authorize(
        self,
        client_id: str,
        code: Pkce | None,
        roots: tuple[str, ...] = ("docs",),
        profile: str = "reader",
        **params: str,
    ) -> dict[str, Any]:
        query = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": REDIRECT,
            "state": "st-123",
            "resource": RESOURCE,
        }
        if code is not None:
            query |= {"code_challenge": code.challenge, "code_challenge_method": "S256"}
        query |= params
        query = {k: v for k, v in query.items() if v != "-"}
        return self.result(
            "oauth_authorize", public_url=PUBLIC, params=query, roots=list(roots), profile=profile
        )

    def wait(self, request_id: str, wait_s: float = 10) -> dict[str, Any]:
        return self.result("oauth_authorize_wait", request_id=request_id, wait_s=wait_s)

    def token(self, **form: str) -> dict[str, Any]:
        return self.result("oauth_token", public_url=PUBLIC, form=form)

    def check(self, client_id: str, token_id: str) -> dict[str, Any]:
        return self.result("oauth_check", client_id=client_id, token_id=token_id)

    def approved_code(
        self,
        client_id: str,
        code: Pkce,
        approve: bool = True,
        roots: tuple[str, ...] = ("docs",),
        profile: str = "reader",
    ) -> tuple[dict[str, Any], dict[str, list[str]]]:
        """Authorize, answer the card, collect the redirect: (the card, the redirect's query)."""
        started = self.authorize(client_id, code, roots, profile)
        assert started["kind"] == "wait", started
        card = wait_card(self.gateway)
        assert decide(self.gateway, card["id"], approve)["ok"]
        answer = self.wait(started["request_id"])
        card["user_code_shown"] = started["user_code"]
        assert answer["location"].startswith(REDIRECT + "?")
        return card, parse_qs(urlsplit(answer["location"]).query)

    def tokens(
        self,
        client_id: str,
        code: Pkce,
        roots: tuple[str, ...] = ("docs",),
        profile: str = "reader",
    ) -> dict[str, Any]:
        _, query = self.approved_code(client_id, code, roots=roots, profile=profile)
        answer = self.token(
            grant_type="authorization_code",
            code=query["code"][0],
            redirect_uri=REDIRECT,
            client_id=client_id,
            code_verifier=code.verifier,
            resource=RESOURCE,
        )
        assert answer["status"] == 200, answer
        return dict(answer["body"])

    def exit(self) -> None:
        self.agent.exit()


def fields_of(card: dict[str, Any]) -> dict[str, str]:
    return dict(card["fields"])


def claims(relay: Relay, token: str) -> dict[str, Any]:
    """Verify ``token`` as the context server would: with the key ``oauth_keys`` gives."""
    [key] = relay.result("oauth_keys")["keys"]
    assert jwt.get_unverified_header(token)["kid"] == key["kid"]
    raw = base64.urlsafe_b64decode(key["x"] + "=" * (-len(key["x"]) % 4))
    public = Ed25519PublicKey.from_public_bytes(raw)
    return dict(jwt.decode(token, public, algorithms=["EdDSA"], audience=RESOURCE, issuer=PUBLIC))
