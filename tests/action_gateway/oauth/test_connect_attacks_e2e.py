"""`sp oauth connect` against callbacks an attacker shapes, through a real gateway and the real
authorization server: the redirect that reaches sp's loopback listener is altered on its way (its
`state` or RFC 9207 `iss` forged or left out, as a page that races the provider's would send),
or the human refuses at the provider. Each connect fails, stores nothing, and -- when the
callback fails its checks -- never sends the code to the token endpoint; a clean connect on the
same gateway still works afterwards."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import httpx
import pytest

from harness.gateway import REPO, clean_env
from harness.oidc_browser import Browser
from tests.action_gateway.oauth.oauth_rig import NAME, Rig, RigFor, connect
from tests.cli.test_real_vault_e2e import sp

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.oauth.protocol"

pytestmark = pytest.mark.integration

Tamper = Callable[[dict[str, str]], dict[str, str]]


def _with(**changes: str) -> Tamper:
    return lambda query: {**query, **changes}


def _without(name: str) -> Tamper:
    return lambda query: {k: v for k, v in query.items() if k != name}


FORGED: dict[str, Tamper] = {
    "another state": _with(state="forged-state-value"),
    "no state": _without("state"),
    "another issuer": _with(iss="https://evil.safeport.test"),
    "the issuer with a trailing slash": lambda q: {**q, "iss": q["iss"] + "/"},
    "no issuer": _without("iss"),
    "a second state": lambda q: q,  # doubled below: two values for one parameter
}


def _connect_through(rig: Rig, tamper: Tamper | None, *, double: str | None = None,
                     consent: bool = True) -> tuple[int, str]:  # fmt: skip
    """Run `sp oauth connect` while the browser's callback is altered by ``tamper`` before it
    reaches sp's listener. Returns sp's exit status and everything it printed."""
    argv = [sys.executable, "-m", "safeport", "oauth", "connect", NAME, "--no-browser", "--json",
            "--timeout", "30", "--passphrase-file", str(rig.home / "pw")]  # fmt: skip
    with subprocess.Popen(argv, cwd=REPO, env=clean_env(rig.home), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as running:  # fmt: skip
        assert running.stderr is not None
        url = ""
        for line in running.stderr:
            if line.startswith("open: "):
                url = line.strip().removeprefix("open: ")
                break
        with Browser(rig.provider.ca_file, "sybil", consent=consent) as browser:
            final = browser.authorize(url, "http://127.0.0.1:")
        parts = urlsplit(final)
        query = dict(parse_qsl(parts.query))
        pairs = list((tamper or (lambda q: q))(query).items())
        if double is not None:
            pairs.append(("state", double))
        delivered = urlunsplit(parts._replace(query=urlencode(pairs)))
        httpx.get(delivered, timeout=10, trust_env=False)
        out, err = running.communicate(timeout=60)
    said = out + err
    rig.said.append(said)
    assert "code" not in query or query["code"] not in said  # the code is never shown
    return running.returncode, said


def _grants(rig: Rig) -> list[str]:
    listed = json.loads(sp(rig.home, "vault", "list", "--json").stdout)
    return [entry["name"] for entry in listed if entry["kind"] == "oauth"]


def test_forged_or_refused_callbacks_connect_nothing_and_send_nothing(rig_for: RigFor) -> None:
    rig = rig_for(None)
    for what, tamper in FORGED.items():
        exchanges = len(rig.provider.token_requests("authorization_code"))
        double = "forged-second-state" if what == "a second state" else None
        status, said = _connect_through(rig, tamper, double=double)
        assert status != 0, (what, said)
        assert _grants(rig) == [], what
        # The code never went to the token endpoint: it is of no use to whoever forged this.
        assert len(rig.provider.token_requests("authorization_code")) == exchanges, what
    # The human refuses at the provider: the callback says access_denied, nothing is stored.
    exchanges = len(rig.provider.token_requests("authorization_code"))
    status, said = _connect_through(rig, None, consent=False)
    assert status != 0 and "access_denied" in said, said
    assert _grants(rig) == []
    assert len(rig.provider.token_requests("authorization_code")) == exchanges
    # The gateway is none the worse: a clean connect right after succeeds.
    rig.said += connect(rig.provider, rig.home, "sybil", device=False)
    assert _grants(rig) == [NAME]
