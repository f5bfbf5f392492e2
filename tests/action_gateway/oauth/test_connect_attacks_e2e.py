"""`sp oauth connect` against callbacks an attacker shapes, through a real gateway and the real
authorization server: the redirect that reaches sp's loopback listener is altered on its way (its
`state` or RFC 9207 `iss` forged or left out, as a page that races the provider's would send),
or the human refuses at the provider. Each connect fails, stores nothing, and -- when the
callback fails its checks -- never sends the code to the token endpoint; a clean connect on the
same gateway still works afterwards. And a provider whose metadata is of another issuer,
redirects, is oversized, malformed or never comes fails the connect within the grant's bound."""

from __future__ import annotations

import json
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import httpx
import pytest
import trustme

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


class _BadProvider(ThreadingHTTPServer):
    """An authorization server on 127.0.0.1 (TLS from its own test CA) that answers its
    metadata badly, the way ``answer`` says."""

    daemon_threads = True
    answer = "another issuer"
    release = threading.Event()

    def handle_error(self, request: object, client_address: object) -> None:
        return  # the gateway hanging up on a bad answer is the point


class _BadHandler(BaseHTTPRequestHandler):
    server: _BadProvider

    def log_message(self, format: str, *args: object) -> None:
        return

    def do_GET(self) -> None:
        origin = f"https://localhost:{self.server.server_address[1]}"
        document = {"issuer": origin, "authorization_endpoint": f"{origin}/auth",
                    "token_endpoint": f"{origin}/token",
                    "code_challenge_methods_supported": ["S256"]}  # fmt: skip
        status, headers, body = 200, {"Content-Type": "application/json"}, b""
        if self.server.answer == "another issuer":
            body = json.dumps({**document, "issuer": "https://evil.safeport.test"}).encode()
        elif self.server.answer == "redirect":
            status, headers = 302, {"Location": "https://evil.safeport.test/.well-known/x"}
        elif self.server.answer == "oversized":
            body = json.dumps({**document, "pad": "x" * 70000}).encode()
        elif self.server.answer == "malformed":
            body = b'{"issuer": "' + origin.encode() + b'", "token_endpoint": '
        elif self.server.answer == "silent":
            self.server.release.wait(30)
            return
        self.send_response(status)
        for name, value in {**headers, "Content-Length": str(len(body))}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def bad_provider(tmp_path: Path) -> Iterator[tuple[_BadProvider, Path]]:
    ca = trustme.CA()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("localhost").configure_cert(context)
    ca_file = tmp_path / "bad-ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    server = _BadProvider(("127.0.0.1", 0), _BadHandler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield server, ca_file
    finally:
        server.release.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_a_provider_that_answers_badly_fails_the_connect_in_bounded_time(
    rig_for: RigFor, bad_provider: tuple[_BadProvider, Path]
) -> None:
    rig = rig_for(None)
    server, ca_file = bad_provider
    text = (rig.home / "gateway.toml").read_text()
    text = text.replace(rig.provider.issuer, f"https://localhost:{server.server_address[1]}")
    text = text.replace(
        f'ca_file = "{rig.provider.ca_file}"\nallow', f'ca_file = "{ca_file}"\nallow', 1
    )
    (rig.home / "gateway.toml").write_text(text.replace("timeout_s = 10", "timeout_s = 2"))
    accepted = sp(rig.home, "policy", "accept", "--passphrase-file", str(rig.home / "pw"), "--yes")
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    argv = ["oauth", "connect", NAME, "--no-browser", "--passphrase-file", str(rig.home / "pw")]
    said = {
        "another issuer": "another issuer",
        "redirect": "never followed",
        "oversized": "max_response_bytes",
        "malformed": "not JSON",
        "silent": "did not answer in time",
    }
    for answer, reason in said.items():
        server.answer = answer
        started = time.monotonic()
        done = sp(rig.home, *argv)
        rig.said.append(done.stdout + done.stderr)
        assert done.returncode != 0 and reason in done.stderr, (answer, done.stderr)
        assert "open:" not in done.stderr  # nothing was opened for a provider that failed
        # The grant's timeout_s (2 s) bounds the wait; the rest is sp's start on a busy machine.
        assert time.monotonic() - started < 20, answer
        assert "xxxxxxxx" not in done.stderr and "evil.safeport.test/.well-known" not in done.stderr
    assert _grants(rig) == []
