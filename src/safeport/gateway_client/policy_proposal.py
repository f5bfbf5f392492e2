"""What `sp policy accept` shows before it asks, and `sp policy diff` shows alone: gateway.toml
as the gateway would accept it, against the policy it serves, line by line and in words, with
what the review finds wrong. One function for both, so the two never show different things."""

from __future__ import annotations

from dataclasses import dataclass

from safeport.action_gateway.policy.meaning import MeaningChange, meaning_of_edit
from safeport.action_gateway.policy.review import PolicyProblem, review
from safeport.action_gateway.policy.store import DiffLine, policy_diff_lines
from safeport.errors import ConfigError, Error
from safeport.gateway_client.control_socket import GatewayClient
from safeport.gateway_client.gateway_view import gateway_view
from safeport.gateway_client.policy_check import local_proposal
from safeport.shared.paths import SafeportPaths
from safeport.shared.schemas import operations as ops
from safeport.shared.schemas.config import GatewayPolicy, parse_gateway_policy


@dataclass(frozen=True)
class PolicyProposal:
    text: str  # the exact bytes `accept` names by digest
    served: str | None  # the accepted policy's text (None: nothing accepted yet)
    policy: GatewayPolicy | None  # parsed; None when nothing waits (the file is the served one)
    problems: tuple[PolicyProblem, ...] = ()
    meaning: tuple[MeaningChange, ...] = ()
    # Nothing is served because the vault, which holds the accepted policy, is locked: what
    # was accepted before cannot be read, so "nothing accepted yet" would not be true.
    vault_locked: bool = False

    @property
    def pending(self) -> bool:
        return self.policy is not None

    def diff(self) -> tuple[DiffLine, ...]:
        return policy_diff_lines(self.served, self.text)


def policy_proposal(paths: SafeportPaths, client: GatewayClient) -> PolicyProposal:
    """gateway.toml against the served policy; a file that cannot be read or parsed raises."""
    status = client.call(ops.POLICY_STATUS)
    if paths.dedicated:
        # The gateway's account cannot read your home: the text is yours, sent with the
        # passphrase, and accepted only if it is exactly what was shown here.
        status = local_proposal(paths.gateway_config, status)
    if status.file_error:
        raise ConfigError(status.file_error)
    text = status.file_text
    if text is None:
        raise Error("gateway.toml cannot be read by the gateway")
    if not status.pending:
        return PolicyProposal(text, status.served_text, None)
    locked = status.served_text is None and client.call(ops.VAULT_STATUS).vault == "locked"
    parsed, _ = parse_gateway_policy(text)
    problems = review(parsed, text, gateway_view(paths).vault_kinds)
    # Beside the text, what it means: the two parsed policies compared, so an edit the text
    # hides (a table folded into a comment) is still said in words.
    meaning = meaning_of_edit(status.served_text, parsed)
    return PolicyProposal(text, status.served_text, parsed, tuple(problems), meaning, locked)
