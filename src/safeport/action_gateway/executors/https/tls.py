"""The TLS context of a declared HTTPS service: the one the executor connects with, and the one
`sp doctor` checks a service against, so the two cannot disagree about a certificate."""

from __future__ import annotations

import ssl

from safeport.action_gateway.executors.interface import ActionError


def tls_context(service_id: str, ca_file: str | None, ca_pem: str | None = None) -> ssl.SSLContext:
    """Verification always on; a ``ca_file`` or ``ca_pem`` replaces the system roots for that
    service."""
    try:
        context = ssl.create_default_context(cafile=ca_file, cadata=ca_pem)
    except (OSError, ssl.SSLError, ValueError) as exc:
        what = "ca_file" if ca_file is not None else "ca_pem"
        raise ActionError(
            "tls_failed", f"the {what} of service {service_id!r} cannot be read"
        ) from exc
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.check_hostname = True
    context.verify_mode = ssl.CERT_REQUIRED
    return context


def caused_by_tls(exc: BaseException) -> bool:
    """Whether a connection failed on its TLS handshake (a certificate off the pin, say) rather
    than on the network: httpx wraps the ``ssl`` error somewhere down the exception's chain."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ssl.SSLError | ssl.CertificateError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False
