"""One RFC 3161 request: a checkpoint note sent to one time-stamping authority.

The request is a SHA-256 imprint of the signed note with a nonce, asking for the TSA's
certificate. The answer is read to at most ``MAX_RESPONSE`` bytes within the timeout, redirects
are never followed (an answer from elsewhere is an answer from no one configured), proxies from
the environment are ignored, and it is kept only if it verifies against the root configured for
that authority, with our nonce, over our digest. Anything else is a fault with a short reason.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import httpx
from cryptography import x509
from rfc3161_client import HashAlgorithm, TimestampRequestBuilder

from safeport.shared.http_deadline import deadline_client, request_deadline
from safeport.shared.schemas.config import TsaSettings
from safeport.vault.timestamp_check import (
    MAX_RESPONSE,
    StampInvalid,
    StoredStamp,
    check_response,
)


class TsaFault(Exception):
    """The authority gave no usable stamp; ``str()`` is a short reason for `sp doctor`."""


@dataclass(frozen=True)
class TsaTarget:
    url: str
    roots: tuple[x509.Certificate, ...]

    @classmethod
    def from_settings(cls, settings: TsaSettings) -> TsaTarget:
        try:
            if settings.ca_pem is not None:
                pem = settings.ca_pem.encode()
            else:
                assert settings.ca_file is not None
                with open(settings.ca_file, "rb") as stream:
                    pem = stream.read(1024 * 1024)
            roots = x509.load_pem_x509_certificates(pem)
        except (OSError, ValueError) as exc:
            raise TsaFault(f"its root certificate cannot be read ({type(exc).__name__})") from exc
        return cls(settings.url, tuple(roots))


def new_client() -> httpx.Client:
    """One client for the stamper's life: its TLS context is built once, not per stamp
    (building it costs more than the request itself). Each request runs under one deadline for
    the whole answer (httpx's timeouts bound each read, not the whole answer: an authority that
    sends its header lines a few bytes at a time would otherwise hold the stamper for hours)."""
    return deadline_client()


def request_stamp(
    client: httpx.Client, target: TsaTarget, note: str, timeout_s: float
) -> StoredStamp:
    """Ask ``target`` to stamp ``note``; the verified stamp, or :class:`TsaFault`."""
    request = (
        TimestampRequestBuilder()
        .data(note.encode())
        .hash_algorithm(HashAlgorithm.SHA256)
        .cert_request(cert_request=True)
        .build()
    )
    deadline = time.monotonic() + timeout_s
    body = bytearray()
    try:
        with (
            request_deadline(deadline),
            client.stream(
                "POST",
                target.url,
                content=request.as_bytes(),
                headers={"Content-Type": "application/timestamp-query"},
                timeout=timeout_s,
                follow_redirects=False,
            ) as response,
        ):
            if response.status_code != 200:
                raise TsaFault(f"it answered HTTP {response.status_code}")
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > MAX_RESPONSE:
                    raise TsaFault("its answer is too large")
                if time.monotonic() > deadline:  # a slow drip within each read's timeout
                    raise TsaFault(f"no answer within {timeout_s:g} s")
    except httpx.TimeoutException as exc:
        raise TsaFault(f"no answer within {timeout_s:g} s") from exc
    except httpx.HTTPError as exc:
        raise TsaFault(f"unreachable ({type(exc).__name__})") from exc
    try:
        check_response(bytes(body), note, target.roots, nonce=request.nonce)
    except StampInvalid as exc:
        raise TsaFault(_first_line(str(exc))) from exc
    return StoredStamp(note=note, tsa=target.url, response=bytes(body))


def _first_line(text: str) -> str:
    """A verification error can carry an OpenSSL error stack: the reason is its start."""
    line = text.split("\n", 1)[0]
    return line if len(line) <= 160 else line[:157] + "..."
