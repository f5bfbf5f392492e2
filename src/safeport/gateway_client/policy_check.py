"""`sp policy check` and `sp policy accept` before anything is printed: gateway.toml read,
parsed and reviewed against the running gateway's vault and served policy."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from safeport.action_gateway.policy.meaning import MeaningChange, meaning_of_edit
from safeport.action_gateway.policy.review import PolicyProblem, review
from safeport.action_gateway.policy.store import PolicyStore, policy_diff_lines
from safeport.errors import Error
from safeport.gateway_client.gateway_view import GatewayView, gateway_view
from safeport.shared.paths import SafeportPaths
from safeport.shared.schemas.config import GatewayPolicy, parse_gateway_policy
from safeport.shared.schemas.results import PolicySnapshot


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
    )


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
