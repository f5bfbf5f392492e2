"""`sp doctor`'s checks of the gateway's side: folders, vault file, sockets, keyring, policy,
and the hosts and services gateway.toml declares, each with its fix.

Network checks go only to what gateway.toml declares, with the pinned identity: SSH hosts must
offer a pinned key, HTTPS services must pass the certificate check the gateway makes (its own
TLS context, not a second one).
"""

from __future__ import annotations

import os
import socket
import ssl
import stat
from collections.abc import Iterable, Iterator
from urllib.parse import urlsplit

from safeport.errors import Error
from safeport.gateway_client.control_socket import GatewayClient
from safeport.gateway_client.gateway_view import gateway_view
from safeport.gateway_client.timestamp_findings import timestamp_findings
from safeport.shared.findings import Finding
from safeport.shared.paths import SafeportPaths, check_socket_path, private_dir_problem
from safeport.shared.schemas import operations as ops

_KEYRING_FIX = "start the Secret Service (gnome-keyring), or `sp vault keyring disable`"


def diagnose(
    paths: SafeportPaths, *, clients: Iterable[Finding] = (), network: bool = True
) -> list[Finding]:
    """Every check in the order `sp doctor` prints them; ``clients`` are the context server's
    findings on the MCP clients' entries, which the gateway's side cannot read itself."""
    return [
        *_folders(paths),
        *_vault_file(paths),
        *_sockets(paths),
        *_keyring(paths),
        *clients,
        *_policy(paths, network=network),
        *_security_keys(paths),
        *_timestamps(paths),
    ]


def _timestamps(paths: SafeportPaths) -> Iterator[Finding]:
    """The time stamps of the checkpoints, and the OAuth grants their providers refused, as the
    running gateway knows them."""
    try:
        with GatewayClient(paths, timeout=5) as client:
            status = client.call(ops.STATUS)
    except Error:
        return  # the gateway's own findings say why it does not answer
    stamps = status.timestamps.model_dump() if status.timestamps is not None else None
    yield from timestamp_findings(stamps)
    for dead in status.dead_grants or []:
        detail = f"its provider refused it ({dead.reason}, since {dead.since})"
        yield Finding(f"oauth grant {dead.name}", "fail", detail, f"sp oauth connect {dead.name}")


def _folders(paths: SafeportPaths) -> Iterator[Finding]:
    uid = os.geteuid()
    for folder in dict.fromkeys(paths.private_dirs()):
        try:
            st = os.lstat(folder)
        except FileNotFoundError:
            continue  # created private when first needed
        problem = private_dir_problem(st, uid)
        if problem:
            yield Finding(f"folder {folder}", "fail", problem, f"chmod 700 {folder} (owned by you)")
        else:
            yield Finding(f"folder {folder}", "ok", "private (0700, yours)")


def _vault_file(paths: SafeportPaths) -> Iterator[Finding]:
    path = paths.vault_file
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        yield Finding("vault", "warn", f"no vault at {path}", "sp vault init")
        return
    mode = stat.S_IMODE(st.st_mode)
    if stat.S_ISLNK(st.st_mode) or st.st_uid != os.geteuid() or mode & 0o077 or st.st_nlink > 1:
        yield Finding(
            "vault", "fail", f"{path} is a link, not yours, or open to others (mode {mode:04o})",
            f"chmod 600 {path}, and make it a regular file you own",
        )  # fmt: skip
    else:
        yield Finding("vault", "ok", f"{path} (0600, yours)")


def _sockets(paths: SafeportPaths) -> Iterator[Finding]:
    try:
        check_socket_path(paths.control_socket)
    except Error as exc:
        yield Finding("sockets", "fail", exc.message, exc.hint or "")
        return
    try:
        with GatewayClient(paths, timeout=5) as client:
            status = client.call(ops.STATUS)
    except Error as exc:
        stale = paths.control_socket.exists()
        yield Finding(
            "gateway",
            "warn",
            ("a stale control.sock is left, and " if stale else "") + exc.message,
            "sp gateway run (or install it as a service: sp gateway run --print-service systemd)",
        )
        return
    vault = status.vault
    yield Finding("gateway", "ok", f"running (pid {status.pid}), vault {vault}")
    if vault != "unlocked":
        yield Finding("vault unlocked", "warn", "the gateway's vault is locked", "sp vault unlock")


def _keyring(paths: SafeportPaths) -> Iterator[Finding]:
    from safeport.vault import FileVaultBackend, VaultFile

    if not paths.vault_file.exists():
        return
    try:
        enabled = FileVaultBackend(VaultFile.at(paths)).status().keyring_enabled
    except Error as exc:
        yield Finding("vault file", "fail", exc.message, exc.hint or "")
        return
    if not enabled:
        yield Finding("keyring", "ok", "not used (unlock with the passphrase)")
        return
    try:
        import keyring
        import keyring.backends.fail

        backend = keyring.get_keyring()
    except Exception as exc:  # a keyring backend's own import or D-Bus errors
        why = f"the OS keyring cannot be opened ({type(exc).__name__})"
        yield Finding("keyring", "fail", why, _KEYRING_FIX)
        return
    if isinstance(backend, keyring.backends.fail.Keyring):
        why = "keyring unlock is on but no OS keyring is available"
        yield Finding("keyring", "fail", why, _KEYRING_FIX)
    else:
        yield Finding("keyring", "ok", f"keyring unlock on ({type(backend).__name__})")


def _policy(paths: SafeportPaths, *, network: bool) -> Iterator[Finding]:
    from safeport.action_gateway.policy.review import review
    from safeport.action_gateway.policy.store import PolicyStore
    from safeport.shared.schemas.config import parse_gateway_policy

    current = PolicyStore(paths.gateway_config).read_file()
    if current.text is None:
        yield Finding("policy", "warn", current.error or "no gateway.toml", "sp init")
        return
    try:
        policy, digest = parse_gateway_policy(current.text)
    except Error as exc:
        yield Finding("policy", "fail", exc.message, f"edit {paths.gateway_config}")
        return
    view = gateway_view(paths)
    problems = review(policy, current.text, view.vault_kinds)
    if network:
        # What the gateway would refuse before a card (addresses, CA), as `sp policy check`.
        from safeport.gateway_client.policy_check import target_problems

        problems += target_problems(paths, policy, current.text)[0]
    for problem in problems:
        yield Finding("policy", "fail", problem.text(), problem.fix)
    if not problems:
        yield Finding("policy", "ok", "gateway.toml parses; keys and credentials check out")
    if view.running and view.served_digest != digest:
        yield Finding("policy served", "warn", "gateway.toml has changes not accepted yet",
                      "sp policy accept")  # fmt: skip
    if not network:
        return
    for host_id, host in sorted(policy.ssh.hosts.items()):
        yield _ssh_host(host_id, host.address, host.port, host.host_keys)
    for service_id, service in sorted(policy.http.services.items()):
        yield _https_service(service_id, service.base_url, service.ca_file, service.ca_pem)
    if policy.sources.openbao and view.running:
        yield from _sources(paths)


def _sources(paths: SafeportPaths) -> Iterator[Finding]:
    """The gateway's own look at its OpenBao/Vault servers: seal, login, and what it may do on
    each declared path (asked with its own login, which `sp` does not hold; no value is read)."""
    try:
        with GatewayClient(paths, timeout=30) as client:
            checks = client.call(ops.SOURCES_CHECK).checks
    except Error as exc:
        yield Finding("openbao", "warn", exc.message, exc.hint or "sp vault unlock")
        return
    for check in checks:
        yield Finding(check.name, "ok" if check.ok else "fail", check.detail, check.fix)


def _security_keys(paths: SafeportPaths) -> Iterator[Finding]:
    """The authenticators `sp` can reach, each asked without a touch which enrolled key it
    holds; a policy that approves with a key and no enrolled key in reach is a warning."""
    from fido2.ctap import CtapError

    from safeport.gateway_client.approver_keys import keys_seen, list_keys

    try:
        with GatewayClient(paths, timeout=5) as client:
            enrolled = list_keys(client)
    except Error:
        return  # the gateway's own finding says why
    try:
        seen = keys_seen(enrolled)
    except (CtapError, OSError, ValueError) as exc:  # a key that answers badly is a finding
        yield Finding("security keys", "warn", f"a security key could not be asked: {exc}")
        return
    for key in seen:
        if key.holds:
            names = ", ".join(held.name for held in key.holds)
            yield Finding(f"security key {key.device}", "ok", f"holds enrolled key {names}")
        else:
            yield Finding(
                f"security key {key.device}", "warn", "not enrolled with this gateway",
                "sp approver enroll --name NAME (with this key plugged in)",
            )  # fmt: skip
    if enrolled.factor_in_use and not any(key.holds for key in seen):
        yield Finding(
            "security keys", "warn", "approvals need a security key and none enrolled is in reach",
            "plug in an enrolled key (or set SAFEPORT_SECURITY_KEY_SOCKET to its socket)",
        )  # fmt: skip


def _ssh_host(host_id: str, address: str, port: int, pinned: list[str]) -> Finding:
    from safeport.action_gateway.executors.ssh.host_key_scan import scan_host_keys

    name = f"ssh host {host_id}"
    try:
        offered = scan_host_keys(address, port, timeout_s=5)
    except Error as exc:
        return Finding(name, "fail", f"{address}:{port} unreachable: {exc.message}",
                       "check the address and port, and that sshd runs there")  # fmt: skip
    pins = {" ".join(line.split()[:2]) for line in pinned}
    if not any(key.pin in pins for key in offered):
        fix = f"check the server's key out of band; `sp ssh scan {address}:{port}`"
        return Finding(name, "fail", f"{address}:{port} offers none of the pinned keys", fix)
    return Finding(name, "ok", f"{address}:{port} offers a pinned key")


def _https_service(
    service_id: str, base_url: str, ca_file: str | None, ca_pem: str | None
) -> Finding:
    name = f"https service {service_id}"
    parts = urlsplit(base_url)
    host, port = parts.hostname or "", parts.port or 443
    from safeport.action_gateway.executors.https.tls import tls_context

    try:
        # The service's own trust, inline `ca_pem` included: the context the executor builds.
        context = tls_context(service_id, ca_file, ca_pem)
        with (
            socket.create_connection((host, port), timeout=5) as sock,
            context.wrap_socket(sock, server_hostname=host),
        ):
            pass
    except Error as exc:  # a ca_file or ca_pem that cannot be read
        key = "ca_file" if ca_file is not None else "ca_pem"
        return Finding(name, "fail", exc.message, f"put the service's CA, PEM-encoded, in {key}")
    except ssl.SSLCertVerificationError as exc:
        fix = (
            "check that ca_pem holds the CA that signed the server's certificate"
            if ca_pem is not None
            else "paste a private CA into ca_pem, or fix the server's certificate"
        )
        return Finding(name, "fail", f"{host}:{port} certificate refused: {exc.verify_message}",
                       fix)  # fmt: skip
    except (OSError, ssl.SSLError) as exc:
        return Finding(name, "fail", f"{host}:{port} unreachable: {exc.strerror or exc}",
                       "check base_url and that the service runs")  # fmt: skip
    return Finding(name, "ok", f"{host}:{port} answers with a certificate the gateway accepts")
