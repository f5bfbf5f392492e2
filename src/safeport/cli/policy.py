"""`sp policy check|accept`: review gateway.toml, and make it the policy the gateway serves."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from safeport.action_gateway.policy.inventory import inventory, inventory_lines
from safeport.action_gateway.policy.meaning import MeaningChange, meaning_lines, meaning_of_edit
from safeport.action_gateway.policy.review import PolicyProblem, review
from safeport.action_gateway.policy.store import policy_diff_lines
from safeport.cli.options import passphrase_file_option
from safeport.cli.render import diff_text
from safeport.cli.secret_input import vault_passphrase
from safeport.errors import ConfigError, Denied, Error
from safeport.gateway_client.control_socket import GatewayClient
from safeport.gateway_client.gateway_view import GatewayView, gateway_view
from safeport.gateway_client.policy_check import check_policy, local_proposal
from safeport.shared.paths import locate
from safeport.shared.schemas import operations as ops
from safeport.shared.schemas.config import parse_gateway_policy, policy_digest
from safeport.shared.visible_text import inert, visible


@click.group()
def policy() -> None:
    """Check and accept the gateway policy (gateway.toml)."""


@policy.command()
@click.option("--json", "as_json", is_flag=True, help="Print the inventory as JSON.")
def check(as_json: bool) -> None:
    """Validate gateway.toml and print everything an agent could ask the gateway to do.

    With a running, unlocked gateway it also checks that every credential is in the vault
    with the declared kind. Exit 1 when a problem is found.
    """
    found = check_policy(locate())
    view, digest, problems, changes = found.view, found.digest, found.problems, found.unaccepted
    data = inventory(found.policy, digest)
    if as_json:
        data["problems"] = [{"line": p.line, "message": p.message, "fix": p.fix} for p in problems]
        data["notes"] = list(found.notes)
        data["vault_checked"] = view.vault_kinds is not None
        data["served"] = view.served_digest == digest
        data["unaccepted_changes"] = changes
        data["unaccepted_meaning"] = (
            None
            if found.meaning is None
            else [{"weight": c.weight, "text": c.text} for c in found.meaning]
        )
        click.echo(json.dumps(data, indent=2, sort_keys=True))
        if problems:
            raise click.exceptions.Exit(1)
        return
    click.echo("\n".join(inert(line) for line in inventory_lines(data)))
    if view.vault_note:
        click.echo(f"note: {view.vault_note}")
    for note in found.notes:
        click.echo(inert(f"note: {note}"))
    _print_problems(problems)
    state = _served_state(view, digest, changes)
    click.echo(state.replace("is valid", "parses but has problems") if problems else state)
    if found.meaning is not None:
        _print_meaning(found.meaning, first=view.served_text is None)
    if problems:
        raise click.exceptions.Exit(1)


def _print_problems(problems: list[PolicyProblem]) -> None:
    if not problems:
        return
    click.echo(f"\n{len(problems)} problem(s):")
    for problem in problems:
        click.echo(inert(f"  {problem.text()}"))
        click.echo(inert(f"    fix: {problem.fix}"))


def _print_meaning(changes: tuple[MeaningChange, ...], *, first: bool) -> None:
    click.echo("\n".join(visible(line) for line in meaning_lines(changes, first=first)))


def _served_state(view: GatewayView, digest: str, changes: int | None) -> str:
    if not view.running:
        return "gateway.toml is valid; it is served only after `sp policy accept`"
    if view.served_digest == digest:
        return "gateway.toml is valid and is the policy the running gateway serves"
    return (
        f"gateway.toml is valid but NOT served: {changes} changed line(s) wait for "
        "`sp policy accept` (the running gateway serves the last accepted policy)"
    )


@policy.command()
@passphrase_file_option
@click.option("--yes", is_flag=True, help="Accept without asking after showing the diff.")
def accept(passphrase_file: Path | None, yes: bool) -> None:
    """Show the diff against the accepted policy, prove the passphrase, serve the new one."""
    paths = locate()
    with GatewayClient(paths) as client:
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
            click.echo("no changes: gateway.toml is already the accepted policy")
            return
        served = status.served_text
        parsed, _ = parse_gateway_policy(text)
        problems = review(parsed, text, gateway_view(locate()).vault_kinds)
        if problems:
            _print_problems(problems)
            raise Denied(
                "not accepted: fix the problem(s) above first", hint="then run `sp policy accept`"
            )
        if served is None:
            click.echo("no policy is accepted yet: every line below is new")
        accepted = served
        click.echo(diff_text(policy_diff_lines(accepted, text), colour=sys.stdout.isatty()))
        # Beside the text, what it means: the two parsed policies compared, so an edit the
        # text hides (a table folded into a comment) is still said in words before the prompt.
        _print_meaning(meaning_of_edit(accepted, parsed), first=accepted is None)
        if not yes and not click.confirm("serve this policy?", default=False):
            raise Error("not accepted", hint="nothing changed")
        secret = vault_passphrase(passphrase_file)()
        try:
            extra = {"text": text} if paths.dedicated else {}
            # The digest of the very text shown above, never one the gateway reported beside
            # it: the gateway accepts the file only if it is still exactly these bytes.
            result = client.call_with_passphrase(
                ops.POLICY_ACCEPT, secret, digest=policy_digest(text), **extra
            )
        finally:
            secret.wipe()
    click.echo(f"accepted policy {result.policy[:16]}; the gateway serves it now")
