"""A real nginx (the Debian package) terminating TLS with a test CA in front of the HTTP
context server, standing in for the tunnel a user points at it (cloudflared, Funnel, ngrok).

It listens on 127.0.0.1 with a certificate for ``localhost`` and forwards to the server as a
tunnel does: the public ``Host`` passed through, no buffering (event streams), HTTP/1.1.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import trustme

from harness.startup import START_S

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


@dataclass(frozen=True)
class Nginx:
    port: int
    ca_file: Path

    @property
    def public_url(self) -> str:
        return f"https://localhost:{self.port}"


def nginx_installed() -> bool:
    return Path(NGINX).exists()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def running_nginx(workdir: Path, upstream_port: int, port: int | None = None) -> Iterator[Nginx]:
    """nginx on ``port`` (a free one by default) forwarding to 127.0.0.1:``upstream_port``."""
    workdir.mkdir(parents=True, exist_ok=True)
    ca = trustme.CA()
    cert = ca.issue_cert("localhost", "127.0.0.1")
    ca_file, cert_file, key_file = workdir / "ca.pem", workdir / "cert.pem", workdir / "key.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    cert.private_key_and_cert_chain_pem.write_to_path(str(cert_file))
    cert.private_key_pem.write_to_path(str(key_file))
    listen = port or _free_port()
    user = "user root;\n" if os.geteuid() == 0 else ""
    temp = "\n".join(
        f"  {kind}_temp_path {workdir / kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    config = workdir / "nginx.conf"
    config.write_text(
        f"""{user}worker_processes 1;
daemon off;
pid {workdir / "nginx.pid"};
error_log {workdir / "error.log"} warn;
events {{ worker_connections 256; }}
http {{
  access_log off;
{temp}
  server {{
    listen 127.0.0.1:{listen} ssl;
    server_name localhost;
    ssl_certificate {cert_file};
    ssl_certificate_key {key_file};
    location / {{
      proxy_pass http://127.0.0.1:{upstream_port};
      proxy_http_version 1.1;
      proxy_set_header Host $http_host;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_read_timeout 60s;
    }}
  }}
}}
"""
    )
    with (workdir / "stderr.log").open("wb") as errors:
        process = subprocess.Popen(
            [NGINX, "-p", str(workdir), "-c", str(config)],
            stdout=subprocess.DEVNULL,
            stderr=errors,
        )
    try:
        _wait_listening(listen, process, workdir)
        yield Nginx(listen, ca_file)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_listening(port: int, process: subprocess.Popen[bytes], workdir: Path) -> None:
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            log = (workdir / "stderr.log").read_text() + (workdir / "error.log").read_text()
            raise AssertionError(f"nginx exited: {log}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError("nginx did not listen")
