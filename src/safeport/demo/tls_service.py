"""A tiny HTTPS JSON service on 127.0.0.1 with its own throwaway CA, for the demo.

It stands in for a deployment API: it answers only requests that carry the demo token, so a
successful answer shows that the gateway injected the credential the agent never saw.
"""

from __future__ import annotations

import datetime
import hmac
import json
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class RunningService:
    base_url: str
    ca_file: Path
    port: int


@contextmanager
def serve_demo_api(folder: Path, token: bytes) -> Iterator[RunningService]:
    """Run the service until the block ends; ``token`` is the bearer value it accepts."""
    ca_file, cert_file, key_file = _make_certificates(folder)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert_file, key_file)
    handler = _handler_for(token)
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield RunningService(base_url=f"https://localhost:{port}", ca_file=ca_file, port=port)
    finally:
        server.shutdown()
        server.server_close()


def _handler_for(token: bytes) -> type[BaseHTTPRequestHandler]:
    expected = b"Bearer " + token

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            given = self.headers.get("Authorization", "").encode()
            if not hmac.compare_digest(given, expected):
                self._reply(401, {"error": "missing or wrong credential"})
                return
            parts = self.path.strip("/").split("/")
            if len(parts) == 5 and parts[0] == "v1" and parts[2] == "services":
                environment, service = parts[1], parts[3]
                self._reply(
                    200,
                    {
                        "environment": environment,
                        "service": service,
                        "state": "running",
                        "revision": "r2026.11.30-1",
                        "internal_note": "not a declared response field; never reaches the agent",
                    },
                )
                return
            self._reply(404, {"error": "no such resource"})

        def _reply(self, status: int, body: dict[str, str]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("X-Demo-Secret-Header", "headers are never returned")
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            return  # keep the demo's terminal for the story, not access logs

    return Handler


def _make_certificates(folder: Path) -> tuple[Path, Path, Path]:
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "safeport demo CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    leaf_key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name)
        .public_key(leaf_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    ca_file = folder / "demo-ca.pem"
    cert_file = folder / "demo-service.pem"
    key_file = folder / "demo-service.key"
    ca_file.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    cert_file.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    key_file.touch(mode=0o600)
    key_file.write_bytes(
        leaf_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return ca_file, cert_file, key_file
