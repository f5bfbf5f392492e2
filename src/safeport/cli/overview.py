"""`sp status`: one screen on the whole installation, gathered without a secret.

Each part is asked where it lives (the gateway on control.sock, the vault's public header, the
journals on disk, the clients' files) and a part that cannot be asked says why, so the overview
itself never fails on a half set-up machine.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from safeport.cli.client_setup import Listed, listing
from safeport.cli.gateway_client import GatewayClient, gateway_view
from safeport.errors import Error
from safeport.shared.audit import discover_journals, verify_journal
from safeport.shared.paths import SafeportPaths


@dataclass(frozen=True)
class Overview:
    home: dict[str, str]
    gateway: dict[str, Any]
    vault: dict[str, Any]
    policy: dict[str, Any]
    journals: list[dict[str, Any]] = field(default_factory=list)
    clients: list[dict[str, Any]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def overview(paths: SafeportPaths, *, project: Path) -> Overview:
    return Overview(
        home={
            "config": str(paths.config_dir),
            "audit": str(paths.audit_dir),
            "run": str(paths.run_dir),
            "SAFEPORT_HOME": os.environ.get("SAFEPORT_HOME", ""),
        },
        gateway=_gateway(paths),
        vault=_vault(paths),
        policy=_policy(paths),
        journals=_journals(paths),
        clients=[_client(item) for item in listing(project) if item.summary is not None],
    )


def _gateway(paths: SafeportPaths) -> dict[str, Any]:
    try:
        with GatewayClient(paths, timeout=5) as client:
            status = client.call("status")
    except Error as exc:
        return {"running": False, "reason": exc.diagnostic()}
    return {
        "running": True,
        "pid": status.get("pid"),
        "uptime_s": status.get("uptime_s"),
        "vault": status.get("vault"),
        "sessions": status.get("sessions"),
        "pending_cards": status.get("pending_cards"),
    }


def _vault(paths: SafeportPaths) -> dict[str, Any]:
    from safeport.vault import FileVaultBackend, VaultFile

    try:
        status = FileVaultBackend(VaultFile.at(paths)).status()
    except Error as exc:
        return {"exists": paths.vault_file.exists(), "problem": exc.diagnostic()}
    return {
        "path": str(status.path),
        "exists": status.exists,
        "entries": status.entries,
        "keyring": status.keyring_enabled,
    }


def _policy(paths: SafeportPaths) -> dict[str, Any]:
    from safeport.action_gateway.policy_store import PolicyStore

    current = PolicyStore(paths.gateway_config).read_file()
    view = gateway_view(paths)
    return {
        "file": str(paths.gateway_config),
        "file_digest": current.digest,
        "file_error": current.error,
        "served": view.served_digest,
        "pending": bool(view.running and current.digest and view.served_digest != current.digest),
        "problems": [] if current.error else policy_problems(paths),
    }


def _journals(paths: SafeportPaths) -> list[dict[str, Any]]:
    found = []
    for path in discover_journals(paths.audit_dir):
        try:
            report = verify_journal(path)
        except Error as exc:
            found.append({"journal": path.stem, "ok": False, "verdict": exc.diagnostic()})
            continue
        found.append(
            {
                "journal": report.journal,
                "records": report.records,
                "ok": report.ok,
                "verdict": report.verdict(),
            }
        )
    return found


def _client(item: Listed) -> dict[str, Any]:
    assert item.summary is not None
    return {
        "client": item.client,
        "scope": item.scope,
        "path": str(item.path),
        "profile": item.summary.profile,
        "ok": not item.problems,
        "problems": list(item.problems),
    }


def overview_lines(view: Overview) -> list[str]:
    """The screen `sp status` prints."""
    gateway = view.gateway
    lines = [
        "gateway   "
        + (
            f"running (pid {gateway['pid']}, up {gateway['uptime_s']} s), vault {gateway['vault']}"
            if gateway["running"]
            else "not running — start it with `sp gateway run`"
        )
    ]
    home = view.home
    lines.append(f"home      {home['config']} (policy, vault); journals in {home['audit']}")
    vault = view.vault
    if vault.get("problem"):
        lines.append(f"vault     {vault['problem']}")
    elif vault["exists"]:
        keyring = ", keyring unlock on" if vault.get("keyring") else ""
        count = vault["entries"]
        entries = f"{count} entry" if count == 1 else f"{count} entries"
        lines.append(f"vault     {entries} in {vault['path']}{keyring}")
    else:
        lines.append("vault     none yet — create it with `sp vault init`")
    policy = view.policy
    if policy["file_error"]:
        lines.append(f"policy    {policy['file_error']}")
    for problem in policy.get("problems", []):
        lines.append(f"policy    PROBLEM {problem} (`sp policy check`)")
    served = policy["served"]
    lines.append(
        "policy    served "
        + (served[:16] if served else "none")
        + (
            " — gateway.toml has changes waiting for `sp policy accept`"
            if policy["pending"]
            else ""
        )
    )
    if gateway["running"]:
        lines.append(f"sessions  {gateway['sessions']} open")
        lines.append(f"cards     {gateway['pending_cards']} waiting for a human")
    for journal in view.journals:
        mark = "ok" if journal["ok"] else "PROBLEM"
        lines.append(f"journal   {journal['journal']:<9} {mark:<8} {journal['verdict']}")
    if not view.journals:
        lines.append("journal   none yet")
    for client in view.clients:
        scope = f" ({client['scope']})" if client["scope"] else ""
        state = "ok" if client["ok"] else "DIFFERS: " + "; ".join(client["problems"])
        lines.append(f"client    {client['client']}{scope} profile {client['profile']}: {state}")
    if not view.clients:
        lines.append("client    none for this folder — `sp client install CLIENT`")
    return lines


def policy_problems(paths: SafeportPaths) -> list[str]:
    """What `sp policy check` would report about gateway.toml now, as lines (empty: none)."""
    from safeport.action_gateway.policy_review import review
    from safeport.action_gateway.policy_store import PolicyStore
    from safeport.shared.schemas.config import parse_gateway_policy

    current = PolicyStore(paths.gateway_config).read_file()
    if current.text is None:
        return [current.error or "gateway.toml cannot be read"]
    try:
        policy, _ = parse_gateway_policy(current.text)
    except Error as exc:
        return [exc.diagnostic()]
    return [
        problem.text() for problem in review(policy, current.text, gateway_view(paths).vault_kinds)
    ]
