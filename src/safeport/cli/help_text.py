"""Every command's examples, and one metavar per kind of value, applied to the whole tree.

Kept in one table so `sp COMMAND --help` always ends with commands a person can run as written,
and so a file is FILE, a folder DIR, a count N and a duration SECONDS everywhere.
"""

from __future__ import annotations

import inspect

import click

EXAMPLES: dict[str, tuple[str, ...]] = {
    "sp": ("sp init", "sp status", "sp doctor", "sp demo --yes"),
    "sp init": ("sp init", "sp init --passphrase-file pw.txt"),
    "sp audit": ("sp audit verify ~/.local/state/safeport/audit/actions.jsonl",),
    "sp audit verify": (
        "sp audit verify ~/.local/state/safeport/audit/actions.jsonl",
        "sp audit verify actions.jsonl --checkpoint checkpoint.json",
    ),
    "sp audit show": ("sp audit show --journal actions --limit 20", "sp audit show --unseal"),
    "sp audit checkpoint": ("sp audit checkpoint --out checkpoint.json",),
    "sp gateway": ("sp gateway run", "sp gateway status"),
    "sp gateway run": ("sp gateway run", "sp gateway run --print-service systemd"),
    "sp gateway status": ("sp gateway status", "sp gateway status --json"),
    "sp gateway stop": ("sp gateway stop", "sp gateway stop --wait 60 && sp gateway run"),
    "sp gateway reload": ("sp gateway reload", "sp gateway reload --json"),
    "sp gateway install": (
        "sp gateway install --human alice --print",
        "sp gateway install --human alice",
    ),
    "sp gateway uninstall": ("sp gateway uninstall --print", "sp gateway uninstall --purge"),
    "sp approvals": ("sp approvals watch",),
    "sp approvals list": (
        "sp approvals list",
        "sp approvals list --full",
        "sp approvals list --json",
    ),
    "sp approvals show": ("sp approvals show c-7f3a", "sp approvals show c-7f3a --full"),
    "sp approvals approve": ("sp approvals approve c-7f3a",),
    "sp approvals deny": ("sp approvals deny c-7f3a",),
    "sp approvals watch": ("sp approvals watch", "sp approvals watch --passphrase-file pw.txt"),
    "sp approver": ("sp approver enroll --name blue-key", "sp approver list"),
    "sp approver enroll": (
        "sp approver enroll --name blue-key",
        "SAFEPORT_SECURITY_KEY_SOCKET=/run/user/1000/fido.sock sp approver enroll",
    ),
    "sp approver list": ("sp approver list", "sp approver list --json"),
    "sp approver remove": ("sp approver remove 3q2-Xa9F",),
    "sp sessions": ("sp sessions list",),
    "sp sessions list": ("sp sessions list --json",),
    "sp sessions revoke": ("sp sessions revoke s-1a2b",),
    "sp policy": ("sp policy check", "sp policy diff", "sp policy accept"),
    "sp policy check": ("sp policy check", "sp policy check --json"),
    "sp policy accept": ("sp policy accept", "sp policy accept --passphrase-file pw.txt --yes"),
    "sp policy diff": ("sp policy diff", "sp policy diff --json"),
    "sp policy edit": ("sp policy edit", "EDITOR=nano sp policy edit"),
    "sp policy remove": (
        "sp policy remove ssh staging",
        "sp policy remove operation deploy-api/create_issue",
        "sp policy remove credential staging-key",
    ),
    "sp policy reference": ("sp policy reference > policy.md",),
    "sp policy add": ("sp policy add http github", "sp policy add ssh staging"),
    "sp policy add http": (
        "sp policy add http github --base-url https://api.github.com "
        "--operation 'get_issue=GET /repos/{owner}/{repo}/issues/{number}'",
    ),
    "sp policy add ssh": (
        "sp policy add ssh staging --address staging.example.com --user deploy "
        "--host-key 'ssh-ed25519 AAAA…' --command 'uptime=uptime'",
    ),
    "sp policy import": ("sp policy import openapi api.json --operation repos/get",),
    "sp policy import openapi": (
        "sp policy import openapi api.json --operation repos/get --operation issues/create",
        "sp policy import openapi api.yaml --operation getStatus --service status --write",
    ),
    "sp context": ("sp context serve --root ~/src/app",),
    "sp context serve": (
        "sp context serve --root ~/src/app",
        "sp context serve --root ~/src/app --profile agent --origin claude-code",
        "sp context serve --root ~/src/app --http 127.0.0.1:8765 --public-url https://my.tunnel",
    ),
    "sp context call": (
        "sp context call read_file path=README.md --root ~/src/app",
        'sp context call search_project \'{"query": "TODO"}\' --json',
    ),
    "sp context index": ("sp context index --root ~/src/app",),
    "sp context scan": ("sp context scan --root ~/src/app", "sp context scan --json"),
    "sp context allow": ("sp context allow fp1:…", "sp context allow --file settings.py --line 12"),
    "sp context clients": ("sp context clients list", "sp context clients revoke CLIENT_ID"),
    "sp context clients list": ("sp context clients list", "sp context clients list --json"),
    "sp context clients revoke": ("sp context clients revoke https://app.example/client.json",),
    "sp demo": ("sp demo", "sp demo --yes --keep"),
    "sp ssh": ("sp ssh scan build.example.com",),
    "sp ssh scan": ("sp ssh scan build.example.com", "sp ssh scan '[::1]:2222' --json"),
    "sp vault": ("sp vault init", "sp vault add deploy-token --kind token"),
    "sp vault init": ("sp vault init",),
    "sp vault unlock": ("sp vault unlock", "sp vault unlock --keyring"),
    "sp vault lock": ("sp vault lock",),
    "sp vault status": ("sp vault status --json",),
    "sp vault list": ("sp vault list",),
    "sp vault add": (
        "sp vault add deploy-token --kind token",
        "sp vault add build-key --kind ssh-key --value-file ~/.ssh/gateway_ed25519",
        "sp vault add registry --kind basic --username ci --value-file pw.txt",
    ),
    "sp vault remove": ("sp vault remove registry",),
    "sp vault passphrase": ("sp vault passphrase",),
    "sp vault backup": ("sp vault backup ~/vault-backup.sp",),
    "sp vault keyring": ("sp vault keyring enable",),
    "sp vault keyring enable": ("sp vault keyring enable",),
    "sp vault keyring disable": ("sp vault keyring disable",),
    "sp status": ("sp status", "sp status --json"),
    "sp doctor": ("sp doctor", "sp doctor --offline"),
    "sp help": ("sp help environment", "sp help vault unlock"),
    "sp completion": (
        "sp completion bash >> ~/.bashrc",
        "sp completion zsh > ~/.zfunc/_sp",
        "sp completion fish > ~/.config/fish/completions/sp.fish",
    ),
}

# Parameter names (and the kinds of value they take) mapped to the one metavar for that kind.
_METAVARS = {
    "username": "USER",
    "roots": "DIR",
    "limit": "N",
    "timeout": "SECONDS",
    "journal": "NAME",
    "origin": "LABEL",
}


def apply(root: click.Command, path: str = "sp") -> None:
    """Append each command's examples to its help and set the metavar of each value."""
    examples = EXAMPLES.get(path)
    if examples and "Example" not in (root.help or ""):
        block = "\n".join(f"  {line}" for line in examples)
        root.help = f"{inspect.cleandoc(root.help or '')}\n\n\b\nExamples:\n{block}"
    for param in root.params:
        param.metavar = param.metavar or _optional(param, _metavar(param))
    if isinstance(root, click.Group):
        for name, command in root.commands.items():
            apply(command, f"{path} {name}")


def _metavar(param: click.Parameter) -> str | None:
    if isinstance(param, click.Option) and (param.is_flag or param.count):
        return None
    kind = param.type
    if isinstance(kind, click.Choice):
        return None  # click lists the choices
    if isinstance(kind, click.Path):
        return "DIR" if not kind.file_okay else "FILE"
    name = param.name or ""
    if name in _METAVARS:
        return _METAVARS[name]
    if name.endswith("_id"):
        return "ID"
    if name in ("name",):
        return "NAME"
    return None


def _optional(param: click.Parameter, metavar: str | None) -> str | None:
    """An argument that may be left out is shown in brackets, as click does for its own names
    (a metavar set here replaces click's, brackets included)."""
    if metavar is None or not isinstance(param, click.Argument) or param.required:
        return metavar
    return f"[{metavar}...]" if param.nargs == -1 else f"[{metavar}]"


@click.command("help")
@click.argument("topic", nargs=-1)
@click.pass_context
def help_command(ctx: click.Context, topic: tuple[str, ...]) -> None:
    """Help on a topic (environment: every variable safeport reads) or on a command."""
    if topic == ("environment",):
        from safeport.shared.environment import environment_lines

        click.echo("\n".join(environment_lines()))
        return
    command: click.Command = ctx.find_root().command
    context = ctx.find_root()
    for word in topic:
        if not isinstance(command, click.Group):
            raise click.UsageError(f"{context.command_path} has no subcommands", ctx)
        found = command.resolve_command(context, [word])[1]
        assert found is not None  # resolve_command raises for an unknown name
        command = found
        context = click.Context(command, info_name=word, parent=context)
    click.echo(command.get_help(context))
