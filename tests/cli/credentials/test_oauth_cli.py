"""`sp oauth connect` against a real gateway process: the scopes are shown first, the URL to open
is the `open:` line on stderr, the browser's callback reaches `sp`'s loopback listener and is
relayed to the gateway, and a provider the gateway cannot reach fails the command with its
reason and nothing stored. The provider's side of a connect is tested against a real
authorization server elsewhere; here its token endpoint is a closed port."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx

from harness.gateway import REPO, clean_env
from tests.action_gateway.handlers.test_grant_ops_e2e import OAUTH_CREDENTIAL
from tests.cli.running_gateway import running_gateway
from tests.cli.test_real_vault_e2e import POLICY, _home, sp

SUBJECT = "safeport.cli.credentials"


def _open_line(process: subprocess.Popen[str], timeout: float = 30) -> tuple[list[str], str]:
    """The lines `sp` wrote on stderr up to and including its `open:` line, and the URL."""
    assert process.stderr is not None
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line:
            break
        seen.append(line.rstrip("\n"))
        if line.startswith("open: "):
            return seen, line.removeprefix("open: ").strip()
    raise AssertionError(f"no open: line; stderr so far: {seen}")


def test_connect_shows_scopes_then_the_url_and_relays_the_callback(tmp_path: Path) -> None:
    home = _home(tmp_path, sp_vault_init=False)
    (home / "gateway.toml").write_text(POLICY + OAUTH_CREDENTIAL)
    pw = str(home / "pw")
    with running_gateway(home):
        assert sp(home, "policy", "accept", "--passphrase-file", pw, "--yes").returncode == 0
        connect = subprocess.Popen(
            [sys.executable, "-m", "safeport", "oauth", "connect", "tracker", "--no-browser",
             "--timeout", "60", "--passphrase-file", pw],
            cwd=REPO, env=clean_env(home), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        try:
            before, url = _open_line(connect)
            assert "scopes: read" in before
            query = parse_qs(urlsplit(url).query)
            redirect, state = query["redirect_uri"][0], query["state"][0]
            assert redirect.startswith("http://127.0.0.1:") and redirect.endswith("/callback")
            # What the provider's redirect does in the human's browser:
            page = httpx.get(f"{redirect}?code=CANARY-AUTH-CODE&state={state}", timeout=10)
            assert page.status_code == 200
            out, err = connect.communicate(timeout=60)
        finally:
            if connect.poll() is None:
                connect.kill()
                connect.communicate()
        assert connect.returncode != 0
        assert "token endpoint" in err or "reach" in err or "provider" in err, err
        assert "CANARY" not in out + err
        listed = sp(home, "vault", "list", "--json").stdout
        assert "tracker" not in listed


def test_a_callback_from_another_flow_is_refused_by_the_gateway(tmp_path: Path) -> None:
    home = _home(tmp_path, sp_vault_init=False)
    (home / "gateway.toml").write_text(POLICY + OAUTH_CREDENTIAL)
    pw = str(home / "pw")
    with running_gateway(home):
        assert sp(home, "policy", "accept", "--passphrase-file", pw, "--yes").returncode == 0
        connect = subprocess.Popen(
            [sys.executable, "-m", "safeport", "oauth", "connect", "tracker", "--no-browser",
             "--timeout", "60", "--passphrase-file", pw],
            cwd=REPO, env=clean_env(home), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        try:
            _, url = _open_line(connect)
            redirect = parse_qs(urlsplit(url).query)["redirect_uri"][0]
            httpx.get(f"{redirect}?code=c&state=forged-state-of-another-flow", timeout=10)
            _, err = connect.communicate(timeout=60)
        finally:
            if connect.poll() is None:
                connect.kill()
                connect.communicate()
        assert connect.returncode == 1 and "state" in err, err
