"""A real RFC 3161 time-stamping authority on 127.0.0.1: OpenSSL's `openssl ts -reply` with a
TSA key and certificate from a test CA (trustme, like the TLS server's), behind a small HTTP
endpoint, started once per test session.

Paths: ``/tsr`` answers honestly; ``/slow`` answers honestly after ``SLOW_S`` seconds;
``/garbage`` answers bytes that are no response; ``/other`` answers a stamp of another digest;
``/wrong-ca`` answers a stamp from a TSA certified by a CA nobody configured; ``/trickle``
sends its header lines a few bytes at a time for ``SLOW_S`` seconds, each read well within any
read timeout. ``down_url`` is a port nothing listens on. Every request is counted per path.
"""

from __future__ import annotations

import datetime
import hashlib
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import trustme
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

OPENSSL = shutil.which("openssl")
SLOW_S = 10.0

_CONFIG = """
[ tsa ]
default_tsa = tsa_config
[ tsa_config ]
serial = {dir}/serial
crypto_device = builtin
signer_cert = {dir}/tsa.pem
certs = {dir}/tsa.pem
signer_key = {dir}/tsa.key
signer_digest = sha256
default_policy = 1.3.6.1.4.1.55555.1
digests = sha256, sha384, sha512
accuracy = secs:1
ordering = yes
tsa_name = yes
ess_cert_id_chain = no
ess_cert_id_alg = sha256
"""


@dataclass
class Tsa:
    """One signing identity: a key and a timeStamping certificate issued by ``ca``."""

    folder: Path
    ca: trustme.CA

    def __post_init__(self) -> None:
        key = ec.generate_private_key(ec.SECP256R1())
        ca_key = serialization.load_pem_private_key(self.ca.private_key_pem.bytes(), None)
        ca_cert = x509.load_pem_x509_certificate(self.ca.cert_pem.bytes())
        now = datetime.datetime.now(datetime.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "safeport test TSA")]))
            .issuer_name(ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.TIME_STAMPING]), True)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), True)
            .sign(ca_key, hashes.SHA256())  # type: ignore[arg-type]
        )
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / "tsa.key").write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        (self.folder / "tsa.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        (self.folder / "serial").write_text("01\n")
        (self.folder / "tsa.cnf").write_text(_CONFIG.format(dir=self.folder))
        self.ca_file = self.folder / "ca.pem"
        self.ca.cert_pem.write_to_path(str(self.ca_file))
        self._lock = threading.Lock()  # openssl ts bumps one serial file

    def reply(self, query: bytes) -> bytes:
        """`openssl ts -reply` for a DER TimeStampReq."""
        assert OPENSSL is not None
        with self._lock, tempfile.TemporaryDirectory(dir=self.folder) as work:
            (Path(work) / "q.tsq").write_bytes(query)
            subprocess.run(
                [OPENSSL, "ts", "-reply", "-config", str(self.folder / "tsa.cnf"),
                 "-queryfile", f"{work}/q.tsq", "-out", f"{work}/r.tsr"],
                check=True, capture_output=True, timeout=30,
            )  # fmt: skip
            return (Path(work) / "r.tsr").read_bytes()

    def reply_for(self, data: bytes) -> bytes:
        """A stamp of SHA-256(``data``), asked the way any client would (`openssl ts -query`)."""
        assert OPENSSL is not None
        digest = hashlib.sha256(data).hexdigest()
        query = subprocess.run(
            [OPENSSL, "ts", "-query", "-digest", digest, "-sha256", "-cert"],
            check=True, capture_output=True, timeout=30,
        ).stdout  # fmt: skip
        return self.reply(query)


@dataclass
class TsaServer:
    port: int
    honest: Tsa
    rogue: Tsa  # certified by another CA
    down_url: str
    requests: Counter[str] = field(default_factory=Counter)

    def url(self, path: str = "/tsr") -> str:
        return f"http://127.0.0.1:{self.port}{path}"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        length = min(int(self.headers.get("Content-Length") or 0), 64 * 1024)
        query = self.rfile.read(length)
        tsa = self.server.tsa
        tsa.requests[self.path] += 1
        if self.path == "/slow":
            time.sleep(SLOW_S)
        if self.path == "/trickle":
            self._trickle()
            return
        try:
            # A query names a second authority of the same TSA ("/tsr?second"), counted apart.
            if self.path.partition("?")[0] in ("/tsr", "/slow"):
                body = tsa.honest.reply(query)
            elif self.path == "/wrong-ca":
                body = tsa.rogue.reply(query)
            elif self.path == "/other":
                body = tsa.honest.reply_for(b"another checkpoint")
            else:
                body = b"<html>not a time-stamp response</html>"
        except (OSError, subprocess.SubprocessError):
            return  # a slow answer outliving the session's folder: nobody waits for it
        self.send_response(200)
        self.send_header("Content-Type", "application/timestamp-reply")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except OSError:
            return  # the client gave up waiting (the slow path): expected

    def _trickle(self) -> None:
        deadline = time.monotonic() + SLOW_S
        try:
            self.wfile.write(b"HTTP/1.1 200 OK\r\n")
            while time.monotonic() < deadline:
                self.wfile.write(b"X-Wait: 1\r\n")
                self.wfile.flush()
                time.sleep(0.2)
        except OSError:
            return  # the client gave up: expected
        self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    tsa: TsaServer


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def running_tsa() -> Iterator[TsaServer]:
    folder = Path(tempfile.mkdtemp(prefix="sp-tsa-"))
    try:
        honest = Tsa(folder / "honest", trustme.CA())
        rogue = Tsa(folder / "rogue", trustme.CA())
        server = _Server(("127.0.0.1", 0), _Handler)
        server.tsa = TsaServer(
            server.server_address[1], honest, rogue, f"http://127.0.0.1:{_closed_port()}/tsr"
        )
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
        thread.daemon = True
        thread.start()
        try:
            yield server.tsa
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=5)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
