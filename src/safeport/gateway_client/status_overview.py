"""`sp status`'s view of the installation, gathered without a secret.

Each part is asked where it lives (the gateway on control.sock, the vault's public header, the
journals on disk) and a part that cannot be asked says why, so the overview itself never fails
on a half set-up machine. The clients' entries are the context server's to read: they are
passed in.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from safeport.errors import Error
from safeport.gateway_client.control_socket import GatewayClient
from safeport.gateway_client.gateway_view import gateway_view
from safeport.shared.audit import discover_journals, verify_journal
from safeport.shared.paths import SafeportPaths
from safeport.shared.schemas import operations as ops

# What a script branches on, as `vault status` tools have it: all is well, something needs a
# human, or a part is simply not running (the gateway down, the vault locked or not made yet).
OverviewState = Literal["ok", "problem", "down"]
EXIT_CODES: dict[OverviewState, int] = {"ok": 0, "problem": 1, "down": 2}


@dataclass(frozen=True)
class Overview:
    home: dict[str, str]
    gateway: dict[str, Any]
    vault: dict[str, Any]
    policy: dict[str, Any]
    journals: list[dict[str, Any]] = field(default_factory=list)
    clients: list[dict[str, Any]] = field(default_factory=list)
    # The context server's word on its [secrets] rules (each root served unredacted), passed in.
    secrets: list[dict[str, Any]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "state": self.state, "exit_code": EXIT_CODES[self.state]}

    @property
    def state(self) -> OverviewState:
        """A problem outranks a part that is down: a broken journal needs a human either way."""
        if self.problems():
            return "problem"
        gateway = self.gateway
        if not gateway["running"] or gateway.get("vault") != "unlocked":
            return "down"
        return "ok"

    def problems(self) -> list[str]:
        """What is broken (not merely stopped), in a few words each."""
        found = []
        if self.vault.get("problem"):
            found.append("vault")
        if self.policy.get("file_exists") and self.policy["file_error"]:
            found.append("policy file")
        if self.policy.get("problems") and self.policy.get("file_exists"):
            found.append("policy")
        found += [f"journal {j['journal']}" for j in self.journals if not j["ok"]]
        found += [f"alarm {a.get('kind')}" for a in self.gateway.get("alarms", [])]
        space = self.gateway.get("journal_space")
        if isinstance(space, dict) and space.get("low"):
            found.append("journal space")
        stamps = self.gateway.get("timestamps")
        if isinstance(stamps, dict) and (stamps.get("stale") or stamps.get("faults")):
            found.append("timestamps")
        found += [f"grant {d['name']}" for d in self.gateway.get("dead_grants", [])]
        found += [f"client {c['client']}" for c in self.clients if not c["ok"]]
        found += [f"secrets {f['check']}" for f in self.secrets if f["state"] == "fail"]
        return found


def overview(
    paths: SafeportPaths,
    *,
    clients: list[dict[str, Any]],
    secrets: list[dict[str, Any]] | None = None,
) -> Overview:
    return Overview(
        home={
            "config": str(paths.config_dir),
            "data": str(_vault_file(paths).parent),
            "vault": str(_vault_file(paths)),
            "audit": str(paths.audit_dir),
            "run": str(paths.run_dir),
            "SAFEPORT_HOME": os.environ.get("SAFEPORT_HOME", ""),
        },
        gateway=_gateway(paths),
        vault=_vault(paths),
        policy=_policy(paths),
        journals=_journals(paths),
        clients=clients,
        secrets=secrets or [],
    )


def _gateway(paths: SafeportPaths) -> dict[str, Any]:
    try:
        with GatewayClient(paths, timeout=5) as client:
            status = client.call(ops.STATUS)
    except Error as exc:
        return {"running": False, "reason": exc.diagnostic()}
    return {
        "running": True,
        "pid": status.pid,
        "uptime_s": status.uptime_s,
        "vault": status.vault,
        "sessions": status.sessions,
        "pending_cards": status.pending_cards,
        "journal_space": status.journal_space.model_dump(),
        "alarms": [alarm.model_dump() for alarm in status.alarms],
        "timestamps": status.timestamps.model_dump() if status.timestamps else None,
        "dead_grants": [dead.model_dump() for dead in status.dead_grants or []],
    }


def _vault_file(paths: SafeportPaths) -> Path:
    """The vault the gateway unlocks: with a dedicated account, the account's, not this user's
    own data folder (which `locate()` keeps for everything else of theirs)."""
    if paths.install is not None:
        return paths.install.state_dir / "vault.sp"
    return paths.vault_file


def _vault(paths: SafeportPaths) -> dict[str, Any]:
    from safeport.vault import FileVaultBackend, VaultFile

    if paths.install is not None and _vault_file(paths) != paths.vault_file:
        # The account's file, which this user may not read: its state is the gateway's to say.
        return {"path": str(_vault_file(paths)), "exists": True,
                "entries": None, "keyring": None, "account": paths.install.account}  # fmt: skip
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
    from safeport.action_gateway.policy.store import PolicyStore

    current = PolicyStore(paths.gateway_config).read_file()
    view = gateway_view(paths)
    return {
        "file": str(paths.gateway_config),
        "file_exists": paths.gateway_config.exists(),
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


def policy_problems(paths: SafeportPaths) -> list[str]:
    """What `sp policy check` would report about gateway.toml now, as lines (empty: none)."""
    from safeport.action_gateway.policy.review import review
    from safeport.action_gateway.policy.store import PolicyStore
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
