"""A real OAuth 2 / OpenID Connect authorization server on 127.0.0.1: `oidc-provider` (npm,
OpenID-certified, pinned in package.json) run by node from harness/oidc/provider.mjs, with TLS
from a CA made for the run (trustme, like the TLS server's), started once per test session.

Clients: a public native client (PKCE required, any loopback port for its
``http://127.0.0.1/callback`` redirect, code + device + refresh grants) and a confidential one
(``client_secret_basic``). Refresh tokens rotate on every use and a second use of a spent one
revokes the whole grant, as the provider does. The access-token lifetime is set at run time
(:meth:`OidcProvider.set_access_token_ttl`); an account's grants are revoked as a user does on
the provider's page (:meth:`OidcProvider.revoke_account`). Every request to the token, device,
revocation and resource routes is one line of :meth:`OidcProvider.events` (no token in it). The
device flow paces polls as GitHub does (``interval``, ``slow_down``, ``authorization_pending``),
with a one-second interval so tests stay short.

``GET /api/whoami`` is the protected resource: it answers 200 for a live access token and 401
otherwise.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import ssl
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import trustme

from harness.startup import START_S

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "harness" / "oidc" / "provider.mjs"
PACKAGE = REPO / "node_modules" / "oidc-provider" / "package.json"
PINNED = "9.13.3"
HOST_NAME = "idp.safeport.test"
PUBLIC_CLIENT = "sp-native"
CONFIDENTIAL_CLIENT = "sp-confidential"
REDIRECT_URI = "http://127.0.0.1/callback"  # any port: RFC 8252 loopback for native clients
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"


def missing() -> str | None:
    """Why the provider cannot run here, or None when node and the pinned package are present."""
    if shutil.which("node") is None:
        return "node is not installed"
    if not PACKAGE.is_file():
        return "oidc-provider is not installed (npm install)"
    version = json.loads(PACKAGE.read_text()).get("version")
    if version != PINNED:
        return f"oidc-provider {version} is installed, the tests pin {PINNED} (npm install)"
    return None


@dataclass(frozen=True)
class OidcProvider:
    issuer: str
    port: int
    ca_file: Path
    client_secret: str
    """The confidential client's secret (a test value, from the provider's configuration)."""
    harness_key: str
    events_file: Path
    issued_file: Path
    log_file: Path

    @property
    def resource_url(self) -> str:
        return f"{self.issuer}/api/whoami"

    def client(self) -> httpx.Client:
        """An HTTP client that trusts the run's CA and nothing from the environment."""
        context = ssl.create_default_context(cafile=self.ca_file)
        return httpx.Client(verify=context, trust_env=False, timeout=10)

    def events(self, route: str | None = None) -> list[dict[str, Any]]:
        lines = self.events_file.read_text().splitlines() if self.events_file.exists() else []
        found = [json.loads(line) for line in lines]
        return [e for e in found if route is None or e.get("route") == route]

    def token_requests(self, grant_type: str | None = None) -> list[dict[str, Any]]:
        return [
            e for e in self.events("token") if grant_type is None or e["grant_type"] == grant_type
        ]

    def issued(self, kind: str | None = None) -> list[str]:
        """Every token, code and device code the provider handed out (``kind``: one of
        ``access_token``, ``refresh_token``, ``authorization_code``, ``device_code``)."""
        lines = self.issued_file.read_text().splitlines() if self.issued_file.exists() else []
        found = [json.loads(line) for line in lines]
        return [str(e["value"]) for e in found if kind is None or e["kind"] == kind]

    def set_access_token_ttl(self, seconds: int) -> None:
        """The lifetime of access tokens issued from now on (those issued keep theirs)."""
        self._harness("access-token-ttl", {"seconds": seconds})

    def drop_access_token(self, token: str) -> bool:
        """End one access token now, its grant and refresh token left alive (the resource then
        answers 401 to it). RFC 7009 revocation would end the whole grant with this provider."""
        return bool(self._harness("drop-access-token", {"token": token})["dropped"])

    def revoke_account(self, account: str) -> int:
        """Revoke every grant the account gave (their access and refresh tokens die with them)."""
        return int(self._harness("revoke-account", {"account": account})["revoked"])

    def _harness(self, route: str, body: dict[str, Any]) -> dict[str, Any]:
        with self.client() as http:
            answer = http.post(
                f"{self.issuer}/_harness/{route}",
                content=json.dumps(body),
                headers={"x-harness-key": self.harness_key, "content-type": "application/json"},
            )
        answer.raise_for_status()
        return dict(answer.json())


def _clients(secret: str) -> list[dict[str, Any]]:
    grants = ["authorization_code", "refresh_token", DEVICE_GRANT]
    return [
        {
            "client_id": PUBLIC_CLIENT,
            "application_type": "native",
            "token_endpoint_auth_method": "none",
            "redirect_uris": [REDIRECT_URI],
            "grant_types": grants,
            "response_types": ["code"],
        },
        {
            "client_id": CONFIDENTIAL_CLIENT,
            "client_secret": secret,
            "application_type": "native",
            "token_endpoint_auth_method": "client_secret_basic",
            "redirect_uris": [REDIRECT_URI],
            "grant_types": grants,
            "response_types": ["code"],
        },
    ]


@contextmanager
def running_oidc_provider(access_token_ttl: int = 3600) -> Iterator[OidcProvider]:
    workdir = Path(tempfile.mkdtemp(prefix="sp-oidc-"))
    try:
        ca = trustme.CA()
        cert = ca.issue_cert("127.0.0.1", "localhost", HOST_NAME)
        ca_file, cert_file, key_file = workdir / "ca.pem", workdir / "cert.pem", workdir / "key.pem"
        ca.cert_pem.write_to_path(str(ca_file))
        cert.cert_chain_pems[0].write_to_path(str(cert_file))
        cert.private_key_pem.write_to_path(str(key_file))
        secret, harness_key = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        config = {
            "cert_file": str(cert_file),
            "key_file": str(key_file),
            "ready_file": str(workdir / "ready.json"),
            "events_file": str(workdir / "events.jsonl"),
            "issued_file": str(workdir / "issued.jsonl"),
            "access_token_ttl": access_token_ttl,
            "device_interval": 1,
            "slow_down_step": 1,
            "harness_key": harness_key,
            "clients": _clients(secret),
        }
        config_file = workdir / "config.json"
        fd = os.open(config_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump(config, out)
        log_file = workdir / "provider.log"
        with log_file.open("wb") as log:
            process = subprocess.Popen(
                ["node", str(SCRIPT), str(config_file)],
                cwd=REPO,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "NODE_ENV": "test"},
            )
        try:
            port = _wait_ready(workdir / "ready.json", process, log_file)
            yield OidcProvider(
                issuer=f"https://127.0.0.1:{port}",
                port=port,
                ca_file=ca_file,
                client_secret=secret,
                harness_key=harness_key,
                events_file=workdir / "events.jsonl",
                issued_file=workdir / "issued.jsonl",
                log_file=log_file,
            )
        finally:
            process.terminate()
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _wait_ready(ready: Path, process: subprocess.Popen[bytes], log: Path) -> int:
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        if ready.exists():
            return int(json.loads(ready.read_text())["port"])
        if process.poll() is not None:
            break
        time.sleep(0.05)
    state = "exited" if process.poll() is not None else f"still starting after {START_S:.0f} s"
    raise RuntimeError(
        f"oidc-provider did not start ({state}): {log.read_text(errors='replace')[-2000:]}"
    )
