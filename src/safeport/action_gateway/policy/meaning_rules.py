"""The sentences for the fields that decide who may ask for what, how often and under which
approval: each says its change loosened or tightened, never a neutral "changed" where the
direction is known. ``meaning.py`` walks the two policies and hands a field here when its path
matches one of ``RULES``; both say their sentences into one ``Said``. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from safeport.action_gateway.policy.words import shown, where
from safeport.shared.schemas.config import (
    CallerRule,
    GatewayPolicy,
    HttpService,
    SqlDatabase,
    SshHost,
)

Weight = Literal["loosened", "changed", "tightened"]
Path = tuple[str, ...]


@dataclass
class Said:
    """The changes said so far, each a weight and its sentence (printable ASCII only), and both
    policies, for a sentence that follows a reference (a host's credential) from one table to
    another."""

    old: GatewayPolicy
    new: GatewayPolicy
    changes: list[tuple[Weight, str]] = field(default_factory=list)


def say(out: Said, weight: Weight, text: str) -> None:
    out.changes.append((weight, text))


def more(first: object, second: object) -> bool:
    return float(str(first)) > float(str(second))


Rule = Callable[[Path, object, object, Said], bool]


def _callers_table(path: Path, old: object, new: object, out: Said) -> bool:
    if new is None:
        count = len(getattr(old, "rules", []))
        say(
            out,
            "loosened",
            "THE [callers] TABLE IS REMOVED: ANY process of your "
            f"uid may now propose actions (before, {count} rule(s) "
            "decided which programs may)",
        )
        return True
    if old is None:
        rules = getattr(new, "rules", [])
        say(
            out,
            "tightened",
            f"a [callers] table is added: only processes "
            f"matching its {len(rules)} rule(s) may propose actions",
        )
        for rule in rules:
            say(out, "changed", f"caller rule: {_caller_rule(rule)}")
        return True
    return False


def _caller_rules(path: Path, old: object, new: object, out: Said) -> bool:
    old_rules = old if isinstance(old, list) else []
    new_rules = new if isinstance(new, list) else []
    for rule in new_rules:
        if rule not in old_rules:
            say(
                out,
                "loosened",
                "a caller rule is added; processes matching it "
                f"may now propose actions: {_caller_rule(rule)}",
            )
    for rule in old_rules:
        if rule not in new_rules:
            say(out, "tightened", f"a caller rule is removed: {_caller_rule(rule)}")
    if not new_rules and old_rules:
        say(out, "tightened", "[callers] rules = []: no process may propose")
    return True


def _caller_rule(rule: object) -> str:
    if not isinstance(rule, CallerRule):
        return shown(rule)
    fields = {name: value for name, value in rule.model_dump().items() if value is not None}
    if not fields:
        return "a rule with no condition (it matches every process)"
    return ", ".join(f"{name} = {shown(value)}" for name, value in fields.items())


def _approval(path: Path, old: object, new: object, out: Said) -> bool:
    if new == "session":
        text = "one approval now covers every call of a process for its whole session"
        say(out, "loosened", f"{where(path[:-1])}: {text} (was per call)")
    else:
        text = f"every call now needs its own approval (was {shown(old)})"
        say(out, "tightened", f"{where(path[:-1])}: {text}")
    return True


def _action_approval(path: Path, old: object, new: object, out: Said) -> bool:
    """An action's own `approval`: said by what it makes of the calls, its credential's
    approval filling in where the action sets none."""
    before = old or _credential_approval(out.old, path)
    after = new or _credential_approval(out.new, path)
    if before == after:
        say(out, "changed", f"{where(path)} changes from {shown(old)} to {shown(new)}")
    else:
        _approval(path, before, after, out)
    return True


def _credential_approval(policy: GatewayPolicy, path: Path) -> str:
    """The approval of the credential the table at ``path`` uses (per call when absent)."""
    tables: dict[str, Mapping[str, SshHost | HttpService | SqlDatabase]]
    tables = {"ssh": policy.ssh.hosts, "http": policy.http.services, "sql": policy.sql.databases}
    owner = tables[path[0]].get(path[2])
    credential = policy.credentials.get(owner.credential) if owner is not None else None
    return credential.approval if credential is not None else "per-call"


def _rate_cap(path: Path, old: object, new: object, out: Said) -> bool:
    place = where(path[:-1])
    if new is None:
        say(out, "loosened", f"{place}: the rate cap is REMOVED (was {old}/min)")
    elif old is None:
        say(out, "tightened", f"{place}: calls are now capped at {new}/min")
    else:
        weight: Weight = "loosened" if more(new, old) else "tightened"
        say(out, weight, f"{place}: the rate cap changes from {old} to {new}/min")
    return True


def _auto_lock(path: Path, old: object, new: object, out: Said) -> bool:
    if new == 0:
        say(out, "loosened", f"the vault no longer locks itself (was after {old} idle minutes)")
    elif old == 0:
        say(out, "tightened", f"the vault now locks itself after {new} idle minutes")
    else:
        weight: Weight = "loosened" if more(new, old) else "tightened"
        say(out, weight, f"auto-lock changes from {old} to {new} idle minutes")
    return True


def _syslog(path: Path, old: object, new: object, out: Said) -> bool:
    weight: Weight = "loosened" if new == "off" else "changed"
    say(out, weight, f"signed journal heads go to syslog {shown(new)} (was {shown(old)})")
    return True


def _whole(path: Path, old: object, new: object, out: Said) -> bool:
    say(out, "loosened", f"{where(path)} changes from {shown(old)} to {shown(new)}")
    return True


def _credential_used(path: Path, old: object, new: object, out: Said) -> bool:
    """A host or service moved to another credential: what its calls' approval and rate cap
    become is that credential's, said for the host as if its own fields had changed."""
    say(out, "loosened", f"{where(path)} changes from {shown(old)} to {shown(new)}")
    before = out.old.credentials.get(str(old))
    after = out.new.credentials.get(str(new))
    if before is None or after is None:
        return True
    if before.approval != after.approval:
        _approval((*path[:-1], "approval"), before.approval, after.approval, out)
    if before.rate_per_minute != after.rate_per_minute:
        _rate_cap((*path[:-1], "rate"), before.rate_per_minute, after.rate_per_minute, out)
    return True


RULES: tuple[tuple[Path, Rule], ...] = (
    (("callers",), _callers_table),
    (("callers", "rules"), _caller_rules),
    (("credentials", "*", "approval"), _approval),
    (("credentials", "*", "rate_per_minute"), _rate_cap),
    (("ssh", "hosts", "*", "commands", "*", "approval"), _action_approval),
    (("http", "services", "*", "operations", "*", "approval"), _action_approval),
    (("sql", "databases", "*", "queries", "*", "approval"), _action_approval),
    (("gateway", "auto_lock_minutes"), _auto_lock),
    (("gateway", "syslog"), _syslog),
    (("ssh", "hosts", "*", "credential"), _credential_used),
    (("http", "services", "*", "credential"), _credential_used),
    (("sql", "databases", "*", "credential"), _credential_used),
    (("http", "services", "*", "operations", "*", "json_body"), _whole),
)
