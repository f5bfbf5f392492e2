"""`sp policy check|diff|accept|add|remove|edit|import`: review gateway.toml, make it the policy
the gateway serves, and write its entries (from flags, an editor or an API description)."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import click

from safeport.action_gateway.policy.approval_factor import loosens_factor
from safeport.action_gateway.policy.inventory import inventory, inventory_lines
from safeport.action_gateway.policy.meaning import MeaningChange, meaning_lines
from safeport.action_gateway.policy.review import PolicyProblem
from safeport.authoring import openapi_import
from safeport.authoring.reference import policy_reference
from safeport.cli.gateway_policy.policy_draft import add, edit, remove
from safeport.cli.options import confirm, passphrase_file_option, refuse_unanswerable
from safeport.cli.render import diff_text
from safeport.cli.replies import PolicyAcceptReply, echo_json
from safeport.cli.secret_input import vault_passphrase
from safeport.errors import ConfigError, Denied, EnvironmentProblem, Error
from safeport.gateway_client.approver_keys import list_keys, policy_assertion
from safeport.gateway_client.control_socket import GatewayClient
from safeport.gateway_client.gateway_view import GatewayView
from safeport.gateway_client.policy_check import check_policy
from safeport.gateway_client.policy_proposal import PolicyProposal, policy_proposal
from safeport.shared.paths import locate
from safeport.shared.schemas import operations as ops
from safeport.shared.schemas.config import parse_gateway_policy, policy_digest
from safeport.shared.visible_text import inert, visible


@click.group()
def policy() -> None:
    """Check and accept the gateway policy (gateway.toml)."""


policy.add_command(add)
policy.add_command(edit)
policy.add_command(remove)


@policy.command()
def reference() -> None:
    """Print every key gateway.toml accepts (type, default, meaning, example) as Markdown."""
    click.echo(policy_reference(), nl=False)


@policy.command()
@click.option("--json", "as_json", is_flag=True, help="Print the inventory as JSON.")
def check(as_json: bool) -> None:
    """Validate gateway.toml and print everything an agent could ask the gateway to do.

    With a running, unlocked gateway it also checks that every credential is in the vault
    with the declared kind. Exit 1 when a problem is found.
    """
    found = check_policy(locate())
    view, digest, problems, changes = found.view, found.digest, found.problems, found.unaccepted
    listed = inventory(found.policy, digest)
    if as_json:
        data = listed.model_dump()
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
    click.echo("\n".join(inert(line) for line in inventory_lines(listed)))
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


def _print_problems(problems: Sequence[PolicyProblem]) -> None:
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
@click.option(
    "--json", "as_json", is_flag=True,
    help="Print the outcome as JSON (the diff and the words go to stderr).",
)  # fmt: skip
def accept(passphrase_file: Path | None, yes: bool, as_json: bool) -> None:
    """Show the diff against the accepted policy, prove the passphrase, serve the new one.

    Without a terminal, --yes and --passphrase-file answer the two questions; without them
    it stops before showing anything. `sp policy diff` shows the same without accepting.
    """
    asks = [] if yes else [("a yes to serve the policy", "--yes")]
    if passphrase_file is None:
        asks.append(("the vault passphrase", "--passphrase-file FILE (- reads stdin)"))
    refuse_unanswerable(asks)
    # With --json, stdout carries the one JSON document; what a person reads goes to stderr.
    words = contextlib.redirect_stdout(sys.stderr) if as_json else contextlib.nullcontext()
    with words:
        reply = _accept(passphrase_file, yes)
    if as_json:
        echo_json(reply)


def _accept(passphrase_file: Path | None, yes: bool) -> PolicyAcceptReply:
    paths = locate()
    with GatewayClient(paths) as client:
        proposal = policy_proposal(paths, client)
        if not proposal.pending:
            click.echo("no changes: gateway.toml is already the accepted policy")
            return PolicyAcceptReply(
                accepted=True, changed=False, policy=policy_digest(proposal.text)
            )
        parsed, text, served = proposal.policy, proposal.text, proposal.served
        assert parsed is not None
        if proposal.problems:
            _print_problems(proposal.problems)
            raise Denied(
                "not accepted: fix the problem(s) above first", hint="then run `sp policy accept`"
            )
        _show_proposal(proposal)
        if not yes and not confirm("serve this policy?", flag="--yes"):
            raise Error("not accepted", hint="nothing changed")
        secret = vault_passphrase(passphrase_file)()
        try:
            extra: dict[str, object] = {"text": text} if paths.dedicated else {}
            old = parse_gateway_policy(served)[0] if served is not None else None
            if loosens_factor(old, parsed) and list_keys(client).keys:
                click.echo("this turns the security key off: touch an enrolled key to accept it")
                extra["assertion"] = policy_assertion(client, policy_digest(text))
            # The digest of the very text shown above, never one the gateway reported beside
            # it: the gateway accepts the file only if it is still exactly these bytes.
            result = client.call_with_passphrase(
                ops.POLICY_ACCEPT, secret, digest=policy_digest(text), **extra
            )
        finally:
            secret.wipe()
    click.echo(f"accepted policy {result.policy[:16]}; the gateway serves it now")
    return PolicyAcceptReply(accepted=True, changed=True, policy=result.policy)


@policy.command()
@click.option("--json", "as_json", is_flag=True, help="Print the diff and its meaning as JSON.")
def diff(as_json: bool) -> None:
    """Show what `sp policy accept` would show, and accept nothing.

    The diff of gateway.toml against the policy the running gateway serves, what the edit
    means in words, and the problems `accept` would refuse it for. Exit 0: no changes; 1:
    gateway.toml differs from the accepted policy; 2: an error (no gateway running, a file
    that does not parse), as `diff` does.
    """
    paths = locate()
    with GatewayClient(paths) as client:
        proposal = policy_proposal(paths, client)
    if proposal.vault_locked:
        raise EnvironmentProblem(
            "the vault is locked, and the accepted policy is inside it",
            hint="run `sp vault unlock`, then `sp policy diff`",
        )
    if as_json:
        click.echo(json.dumps(_proposal_json(proposal), indent=2, sort_keys=True))
    elif not proposal.pending:
        click.echo("no changes: gateway.toml is already the accepted policy")
    else:
        _show_proposal(proposal)
        if proposal.problems:
            _print_problems(proposal.problems)
            click.echo("`sp policy accept` refuses this until they are fixed")
    if proposal.pending:
        raise click.exceptions.Exit(1)


def _show_proposal(proposal: PolicyProposal) -> None:
    if proposal.vault_locked:
        click.echo("the vault is locked, so the accepted policy is unread: every line below is new")
    elif proposal.served is None:
        click.echo("no policy is accepted yet: every line below is new")
    click.echo(diff_text(proposal.diff(), colour=sys.stdout.isatty()))
    _print_meaning(proposal.meaning, first=proposal.served is None)


def _proposal_json(proposal: PolicyProposal) -> dict[str, object]:
    return {
        "differs": proposal.pending,
        "accepted": proposal.served is not None,
        "digest": policy_digest(proposal.text),
        "diff": [{"kind": line.kind, "text": line.text} for line in proposal.diff()],
        "meaning": [{"weight": c.weight, "text": c.text} for c in proposal.meaning],
        "problems": [
            {"line": p.line, "message": p.message, "fix": p.fix} for p in proposal.problems
        ],
    }


@policy.group("import")
def import_() -> None:
    """Start policy entries from a description of an API you already have."""


@import_.command("openapi")
@click.argument("spec", type=click.Path(path_type=Path, dir_okay=False, exists=True))
@click.option("--operation", "operations", multiple=True, required=True, metavar="ID",
              help="An operationId to import (repeat for more).")  # fmt: skip
@click.option(
    "--service", metavar="NAME", help="The service name in gateway.toml (default: from the host)."
)
@click.option(
    "--credential", metavar="NAME", help="The credential it uses (default: the service name)."
)
@click.option(
    "--base-url", metavar="URL", help="The https URL calls go to (default: the first server)."
)
@click.option("--optional", is_flag=True, help="Import optional parameters too.")
@click.option("--write", is_flag=True, help="Append to gateway.toml instead of printing.")
def openapi(
    spec: Path,
    operations: tuple[str, ...],
    service: str | None,
    credential: str | None,
    base_url: str | None,
    optional: bool,
    write: bool,
) -> None:
    """Turn chosen operations of an OpenAPI 3 description (JSON or YAML) into declared
    operations, each param bounded by the description's schema; what it cannot bound is
    marked `# REVIEW:` and listed here. Nothing is served before `sp policy accept`."""
    policy_file = locate().gateway_config
    current = policy_file.read_text(encoding="utf-8") if policy_file.exists() else None
    if write and current is None:
        raise ConfigError(f"{policy_file} does not exist", hint="run `sp init` first")
    choice = openapi_import.ImportChoice(operations, service, credential, base_url, optional)
    result = openapi_import.import_openapi(openapi_import.load_spec(spec), choice, current)
    for warning in result.warnings():
        click.echo(inert(f"review: {warning}"), err=True)
    if not write:
        click.echo(result.text, nl=False)
        return
    openapi_import.write_into(policy_file, result)
    click.echo(
        f"added {len(result.operations)} operation(s) to service {result.service!r} in "
        f"{policy_file}; read the REVIEW lines, then `sp policy check` and `sp policy accept`"
    )
