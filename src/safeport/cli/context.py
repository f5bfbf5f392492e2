"""`sp context`: serve a workspace read-only over MCP stdio, build its search index, and show
(and allow back) the secrets it withholds."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from safeport.cli.options import profile_option, several_humans_passphrase_option
from safeport.cli.render import labelled_lines
from safeport.cli.secret_input import vault_passphrase
from safeport.context_server import (
    ServeOptions,
    allow_secret,
    build_index,
    parse_endpoint,
    scan_roots,
    serve,
    serve_http,
)
from safeport.gateway_client.remote_clients import list_clients, revoke_client
from safeport.shared.paths import locate
from safeport.shared.visible_text import inert


@click.group()
def context() -> None:
    """The read-only workspace server for MCP clients."""


@context.command("serve")
@click.option(
    "--root", "roots", multiple=True, metavar="DIR", help="A folder to serve (repeatable)."
)
@profile_option
@click.option("--origin", default="unknown", show_default=True, help="A label for the journal.")
@click.option(
    "--http",
    "bind",
    metavar="HOST:PORT",
    help="Serve remote clients over Streamable HTTP here instead of stdio (loopback unless TLS).",
)
@click.option("--public-url", metavar="URL", help="The https URL remote clients reach (tunnel).")
@click.option("--tls-cert", type=click.Path(path_type=Path, dir_okay=False), help="PEM cert.")
@click.option("--tls-key", type=click.Path(path_type=Path, dir_okay=False), help="PEM key.")
def serve_command(
    roots: tuple[str, ...],
    profile: str,
    origin: str,
    bind: str | None,
    public_url: str | None,
    tls_cert: Path | None,
    tls_key: Path | None,
) -> None:
    """Serve the roots over stdio (stdout carries only JSON-RPC), or with --http to remote
    clients that the gateway approved (OAuth; the reader profile).

    Without --root, the roots come from `roots = [...]` in context.toml."""
    options = ServeOptions(
        roots=roots, profile="agent" if profile == "agent" else "reader", origin=origin
    )
    if bind is None:
        if public_url or tls_cert or tls_key:
            raise click.UsageError("--public-url and --tls-* go with --http")
        serve(options)
        return
    serve_http(options, parse_endpoint(bind, public_url, tls_cert, tls_key))


@context.command("call")
@click.argument("tool")
@click.argument("arguments", nargs=-1, metavar="[ARGS]...")
@click.option(
    "--root", "roots", multiple=True, metavar="DIR", help="A folder to serve (repeatable)."
)
@profile_option
@click.option(
    "--timeout", type=click.FloatRange(min=1), default=300.0, show_default=True,
    help="Give up after SECONDS (an action waits for its approval within them).",
)  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print the tool's answer as JSON.")
def call_command(
    tool: str,
    arguments: tuple[str, ...],
    roots: tuple[str, ...],
    profile: str,
    timeout: float,
    as_json: bool,
) -> None:
    """Call one tool of the context server from the shell, as an MCP client would; exit 1
    when the tool answers with an error.

    ARGS are key=value words (typed by the tool's input schema) or one JSON object."""
    from safeport.context_server import call_tool

    serve_args = [arg for root in roots for arg in ("--root", root)]
    serve_args += ["--profile", profile, "--origin", "sp-context-call"]
    answer = call_tool(tool, arguments, serve_args, timeout_s=timeout)
    if as_json:
        click.echo(json.dumps(answer.as_json(), indent=2, sort_keys=True))
    elif answer.structured is not None:
        # ASCII JSON holds no control character or look-alike to make inert.
        click.echo(json.dumps(answer.structured, indent=2))
    else:
        # Line by line: the answer is workspace text, inert like every other such field.
        click.echo("\n".join(inert(line) for line in answer.text.splitlines()))


@context.command("index")
@click.option(
    "--root", "roots", multiple=True, metavar="DIR", help="A folder to index (repeatable)."
)
def index_command(roots: tuple[str, ...]) -> None:
    """Build or refresh the search index ahead of time (progress on stderr)."""
    console = Console(stderr=True)
    with _progress(console, "indexing") as progress:
        files, seconds = build_index(roots, progress)
    console.print(f"indexed {files} files in {seconds:.1f} s", highlight=False)


@context.command("scan")
@click.option(
    "--root", "roots", multiple=True, metavar="DIR", help="A folder to scan (repeatable)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON document.")
def scan_command(roots: tuple[str, ...], as_json: bool) -> None:
    """What the server would withhold from each file (kind, line, fingerprint; never a
    value), and what its read policy refuses and why. Without --root, context.toml's roots."""
    with _progress(Console(stderr=True), "scanning") as progress:
        report = scan_roots(roots, progress)
    if as_json:
        click.echo(report.model_dump_json(indent=2))
        return
    many = len(report.roots) > 1
    for root in report.roots:
        if root.redaction_off:
            click.echo(inert(f"WARNING: redaction is OFF for {root.path}: served as written"))
    for file in report.files:
        click.echo(inert(f"{file.root}/{file.path}" if many else file.path))
        for found in file.findings:
            state = "served as written" if found.served_as_written else "withheld"
            lines = f"{found.line}" + (f"-{found.end_line}" if found.end_line > found.line else "")
            mark = f"  {found.fingerprint}" if found.fingerprint else ""
            click.echo(f"  line {lines:<8} {found.kind:<24} {state}{mark}")
    if report.refused:
        click.echo("refused by the read policy:")
    for entry in report.refused:
        shown = f"{entry.root}/{entry.path}" if many else entry.path
        click.echo(inert(f"  {shown}: {entry.why}"))
    if report.kinds:
        click.echo(f"by kind:\n  {'kind':<24} {'findings':>8} {'withheld':>8} {'files':>6}")
    for kind in report.kinds:
        click.echo(f"  {kind.kind:<24} {kind.findings:>8} {kind.withheld:>8} {kind.files:>6}")
    click.echo(
        f"{report.secrets_found} secret(s) in {len(report.files)} of {report.files_scanned} "
        f"file(s), {report.secrets_withheld} withheld; {len(report.refused)} refused"
    )
    if any(f.fingerprint for file in report.files for f in file.findings):
        click.echo("a false positive with a fingerprint: `sp context allow FINGERPRINT`")


@context.command("allow")
@click.argument("fingerprint", required=False)
@click.option("--file", "file", type=click.Path(path_type=Path), help="The file holding it.")
@click.option("--line", "line", type=click.IntRange(min=1), metavar="N", help="Its line in --file.")
@click.option("--root", "roots", multiple=True, metavar="DIR", help="A served folder (repeatable).")
def allow_command(
    fingerprint: str | None, file: Path | None, line: int | None, roots: tuple[str, ...]
) -> None:
    """Serve a false positive as written: the value FINGERPRINT names (from `sp context
    scan`), or the one on --line of --file, is added to [secrets] allow in context.toml.
    Only generic assignments may be allowed back; known formats and private keys never."""
    if (fingerprint is None) == (file is None) or (file is None) != (line is None):
        raise click.UsageError("give a FINGERPRINT, or --file and --line")
    at = (file, line) if file is not None and line is not None else None
    found, added = allow_secret(roots, fingerprint=fingerprint, at=at)
    for value in found:
        state = "allowed" if value.fingerprint in added else "already allowed"
        click.echo(inert(f"{state}: {value.kind} at {value.where}  {value.fingerprint}"))
    if added:
        click.echo("served as written from the next start of the context server")


@contextmanager
def _progress(console: Console, label: str) -> Iterator[Callable[[int, int], None]]:
    """A transient bar on stderr, fed (done, total)."""
    columns = (TextColumn(label), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(label, total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield progress


@context.group("clients")
def clients() -> None:
    """Remote MCP clients (over HTTP) the gateway has registered or approved."""


@clients.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_clients_command(as_json: bool) -> None:
    """Show each remote client, what it was approved for, and its last use."""
    known = list_clients(locate())
    if as_json:
        click.echo(json.dumps([c.model_dump() for c in known], indent=2, sort_keys=True))
        return
    if not known:
        click.echo("no remote clients")
        return
    # Laid out as a card is, at the terminal's width: a name is the client's own text, and one
    # padded with spaces must not wrap into a line that reads as another field.
    width = shutil.get_terminal_size().columns
    blocks = []
    for client in known:
        state = "revoked" if client.revoked else "active"
        rows = [
            ("client", f"{inert(client.client_id)} ({client.source}, {state})"),
            ("name", inert(client.name)),
            ("redirects", inert(", ".join(client.redirect_hosts))),
            ("last use", _when(client.last_used)),
        ]
        rows += [
            (
                "approved",
                f"{inert(', '.join(approval.roots))} as {inert(approval.profile)} "
                f"via {inert(approval.redirect_host)}",
            )
            for approval in client.approved
        ]
        blocks.append("\n".join(labelled_lines(rows, width)))
    click.echo("\n\n".join(blocks))


@clients.command("revoke")
@click.argument("client_id")
@several_humans_passphrase_option
def revoke_client_command(client_id: str, passphrase_file: Path | None) -> None:
    """Stop a remote client now: its next request is refused, and a new one needs a new card."""
    revoked = revoke_client(locate(), client_id, vault_passphrase(passphrase_file))
    click.echo(f"revoked {inert(revoked)}")


def _when(timestamp: float | None) -> str:
    if timestamp is None:
        return "never"
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M UTC")
