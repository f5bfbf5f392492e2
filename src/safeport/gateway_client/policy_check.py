"""`sp policy check` and `sp policy accept` before anything is printed: gateway.toml read,
parsed and reviewed against the running gateway's vault and served policy, and every declared
host and service put through the checks the gateway makes before it shows a card
(:mod:`safeport.action_gateway.executors.preflight`, the same functions, not a copy)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from safeport.action_gateway.executors.preflight import TargetProblem, policy_target_problems
from safeport.action_gateway.policy.meaning import MeaningChange, meaning_of_edit
from safeport.action_gateway.policy.review import PolicyProblem, review
from safeport.action_gateway.policy.store import PolicyStore, policy_diff_lines
from safeport.errors import Error
from safeport.gateway_client.gateway_view import GatewayView, gateway_view
from safeport.shared.paths import SafeportPaths
from safeport.shared.schemas.config import GatewayPolicy, parse_gateway_policy
from safeport.shared.schemas.results import PolicySnapshot
from safeport.shared.text_lines import split_lines


@dataclass(frozen=True)
class PolicyCheck:
    text: str
    policy: GatewayPolicy
    digest: str
    view: GatewayView
    problems: list[PolicyProblem]
    unaccepted: int | None  # changed lines not accepted yet (None: no gateway to ask)
    # What the unaccepted edit changes, in words (None: no gateway to ask, or nothing waits).
    meaning: tuple[MeaningChange, ...] | None = None
    # What could not be judged from here now (a name that does not resolve), in words.
    notes: tuple[str, ...] = field(default=())


def check_policy(paths: SafeportPaths) -> PolicyCheck:
    """The human's gateway.toml reviewed; an unreadable or unparsable file raises."""
    current = PolicyStore(paths.gateway_config).read_file()
    if current.text is None:
        raise Error(
            current.error or f"cannot read {paths.gateway_config}",
            hint="run `sp init` to create one",
        )
    parsed, digest = parse_gateway_policy(current.text)
    view = gateway_view(paths)
    problems = review(parsed, current.text, view.vault_kinds)
    targets, notes = target_problems(paths, parsed, current.text)
    problems += targets
    meaning = None
    if view.running and view.served_digest != digest:
        meaning = meaning_of_edit(view.served_text, parsed)
    return PolicyCheck(
        current.text,
        parsed,
        digest,
        view,
        problems,
        _unaccepted(view, current.text, digest),
        meaning,
        notes,
    )


def target_problems(
    paths: SafeportPaths, policy: GatewayPolicy, text: str
) -> tuple[list[PolicyProblem], tuple[str, ...]]:
    """What the gateway would refuse before a card, as problems on their lines, and the notes
    on what could not be judged now; resolved and judged as the gateway's own account would."""
    served = frozenset(paths.install.humans) if paths.install is not None else {os.geteuid()}
    found = policy_target_problems(
        policy, served_uids=frozenset(served), gateway_uid=paths.gateway_uid
    )
    problems = [
        PolicyProblem(_line_of_key(text, p), p.message, p.fix)
        for p in found
        if p.severity == "problem"
    ]
    return problems, tuple(p.message for p in found if p.severity == "note")


def _line_of_key(text: str, problem: TargetProblem) -> int | None:
    """The line of ``key`` inside the problem's table, else the table's header line."""
    header: int | None = None
    for number, line in enumerate(split_lines(text), start=1):
        stripped = line.strip()
        if stripped.startswith("["):
            if header is not None:
                break
            if stripped == f"[{problem.table}]":
                header = number
        elif header is not None and stripped.split("=")[0].strip() == problem.key:
            return number
    return header


def _unaccepted(view: GatewayView, text: str, digest: str) -> int | None:
    if not view.running:
        return None
    if view.served_digest == digest:
        return 0
    lines = policy_diff_lines(view.served_text, text)
    return sum(1 for line in lines if line.kind in ("added", "removed"))


def local_proposal(path: Path, status: PolicySnapshot) -> PolicySnapshot:
    """policy.status as if the gateway read the human's own gateway.toml (a dedicated
    gateway's account cannot read the human's home: the text is sent with the passphrase)."""
    current = PolicyStore(path).read_file()
    return status.model_copy(
        update={
            "file": current.digest,
            "file_text": current.text,
            "file_error": current.error,
            "pending": bool(current.digest and current.digest != status.served),
        }
    )
