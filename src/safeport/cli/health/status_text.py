"""The screen `sp status` prints from the gathered overview."""

from __future__ import annotations

from typing import Any

from safeport.gateway_client.status_overview import Overview
from safeport.gateway_client.timestamp_findings import timestamp_lines


def overview_lines(view: Overview) -> list[str]:
    """The screen `sp status` prints: the gateway, where things live, the vault, the policy,
    what the running gateway holds, then journals, clients and secrets, and the verdict."""
    gateway = view.gateway
    home = view.home
    lines = [
        _gateway_line(gateway),
        f"home      policy in {home['config']}; vault in {home['data']}",
        f"          journals in {home['audit']}; sockets in {home['run']}",
        _vault_line(view.vault, home),
        *_policy_lines(view.policy, running=gateway["running"]),
    ]
    if gateway["running"]:
        lines.append(f"sessions  {gateway['sessions']} open")
        lines.append(f"cards     {gateway['pending_cards']} waiting for a human")
        lines.extend(alarm_lines(gateway.get("alarms", [])))
        lines.extend(dead_grant_lines(gateway.get("dead_grants", [])))
        lines.extend(_space_lines(gateway.get("journal_space")))
        lines.extend(timestamp_lines(gateway.get("timestamps")))
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
    for finding in view.secrets:
        mark = "WARNING" if finding["state"] == "warn" else "PROBLEM"
        lines.append(f"secrets   {mark} {finding['check']}: {finding['detail']}")
    lines.append(_state_line(view))
    return lines


def _gateway_line(gateway: dict[str, Any]) -> str:
    """Whether the gateway runs, since when, and its vault's state; or how to start it."""
    return "gateway   " + (
        f"running (pid {gateway['pid']}, up {gateway['uptime_s']} s), vault {gateway['vault']}"
        if gateway["running"]
        else "not running — start it with `sp gateway run`"
    )


def _vault_line(vault: dict[str, Any], home: dict[str, str]) -> str:
    """The vault file: a problem with it, the account holding it, its entries, or how to make
    one."""
    if vault.get("problem"):
        return f"vault     {vault['problem']}"
    if vault.get("account"):
        return f"vault     {vault['path']}, held by the gateway's account {vault['account']}"
    if vault["exists"]:
        keyring = ", keyring unlock on" if vault.get("keyring") else ""
        count = vault["entries"]
        entries = f"{count} entry" if count == 1 else f"{count} entries"
        return f"vault     {entries} in {vault['path']}{keyring}"
    return f"vault     none yet at {home['vault']} — create it with `sp vault init`"


def _policy_lines(policy: dict[str, Any], *, running: bool) -> list[str]:
    """gateway.toml's problems, and the policy served with whether the file waits to be
    accepted."""
    lines = []
    if policy["file_error"]:
        lines.append(f"policy    {policy['file_error']}")
    for problem in policy.get("problems", []):
        lines.append(f"policy    PROBLEM {problem} (`sp policy check`)")
    served = policy["served"]
    if not running:
        # What a stopped gateway would serve is not known until it starts; "none" would say
        # that nothing was ever accepted.
        lines.append("policy    served: unknown while the gateway is not running")
    else:
        lines.append(
            "policy    served "
            + (served[:16] if served else "none accepted yet")
            + (
                " — gateway.toml has changes waiting for `sp policy accept`"
                if policy["pending"]
                else ""
            )
        )
    return lines


def _state_line(view: Overview) -> str:
    state = view.state
    if state == "problem":
        return "state     PROBLEM: " + ", ".join(view.problems()) + " (exit 1)"
    if state == "down":
        running = view.gateway["running"]
        part = "the vault is locked" if running else "the gateway is not running"
        return f"state     down: {part} (exit 2)"
    return "state     ok (exit 0)"


def _space_lines(space: Any) -> list[str]:
    """A low journals' disk is said in words: proposals are being refused until it is freed."""
    if not isinstance(space, dict) or not space.get("low"):
        return []
    free = int(space.get("free_bytes", 0)) / (1024 * 1024)
    reserve = int(space.get("reserve_bytes", 0)) / (1024 * 1024)
    return [
        f"disk      PROBLEM the journals' disk has {free:.1f} MiB free (under the "
        f"{reserve:.0f} MiB kept for your commands): agents' proposals are refused until "
        "space is freed"
    ]


def dead_grant_lines(dead: list[dict[str, Any]]) -> list[str]:
    """One line per OAuth grant its provider refused: actions on it fail until reconnected."""
    return [
        f"GRANT {d['name']} is dead ({d['reason']}, since {d['since']}): reconnect it with "
        f"`sp oauth connect {d['name']}`"
        for d in dead
    ]


def alarm_lines(alarms: list[dict[str, Any]]) -> list[str]:
    """One line per alarm this run raised (journaled in sessions.jsonl as well)."""
    lines = []
    for alarm in alarms:
        kind = alarm.get("kind")
        if kind in ("journal.truncated", "journal.rewritten"):
            what = (
                f"{alarm.get('journal')}.jsonl no longer holds the head signed at sequence "
                f"{alarm.get('signed_seq')} ({alarm.get('detail')}; recorded in "
                f"{alarm.get('source')})"
            )
        elif kind == "vault.rollback":
            what = (
                f"the vault file is generation {alarm.get('generation')}, older than the "
                f"{alarm.get('seen')} seen before: an older copy was put back"
            )
        elif kind == "credential.revoke_failed":
            what = (
                f"lease {alarm.get('lease_id')} of OpenBao server {alarm.get('source')} was not "
                f"revoked ({alarm.get('reason')}); the gateway tries again at its next unlock, or "
                "revoke it now with `bao lease revoke`"
            )
        else:
            what = str(alarm.get("detail") or "see `sp audit show --journal sessions`")
        lines.append(f"ALARM {kind}: {what}")
    if alarms:
        lines.append(
            "alarms: investigate before trusting the journals (`sp audit verify --checkpoint`)"
        )
    return lines
