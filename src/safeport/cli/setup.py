"""`sp init`: a first setup that writes commented templates and creates the vault.

Nothing existing is overwritten: each file that is already there is left alone and named.
"""

from __future__ import annotations

from pathlib import Path

import click

from safeport.cli import vault as vault_cli
from safeport.cli.options import passphrase_file_option
from safeport.shared.paths import ensure_private_dir, locate

GATEWAY_TEMPLATE = """\
# safeport gateway policy. Nothing here is served until you run `sp policy accept`.
# Every host, command, service and operation an agent may propose is named below; nothing else
# exists for it. `sp policy check` validates this file and prints what it allows.

[gateway]
approval_timeout_s = 120
auto_lock_minutes = 480          # no human activity on control.sock for this long: lock
session_max_minutes = 720

# [credentials.deploy-token]     # its value: `sp vault add deploy-token --kind token`
# kind = "token"                 # token | basic | ssh-key
# approval = "session"           # session | per-call
#
# [http.services.deploy-api]
# base_url = "https://api.example.com"
# credential = "deploy-token"
# auth = "bearer"
#
# [http.services.deploy-api.operations.deployment_status]
# method = "GET"
# path = "/v1/{environment}/services/{service}/status"
# response_fields = ["environment", "service", "state", "revision"]
# params.environment = { enum = ["staging", "production"] }
# params.service = { pattern = "^[a-z0-9-]{1,48}$" }
#
# [credentials.build-key]        # `sp vault add build-key --kind ssh-key --value-file KEY`
# kind = "ssh-key"
# approval = "per-call"
#
# [ssh.hosts.build-staging]      # pin the key after checking it: `sp ssh scan HOST`
# address = "203.0.113.7"
# user = "deploy"
# host_keys = ["ssh-ed25519 AAAA..."]
# credential = "build-key"
#
# [ssh.hosts.build-staging.commands.read_service_status]
# argv = ["systemctl", "status", "--no-pager", "{service}"]
# params.service = { pattern = "^[a-z0-9-]{1,48}$" }
"""

CONTEXT_TEMPLATE = """\
# safeport context server. `sp context serve --root DIR` overrides `roots`.
# roots = ["~/src/app"]
# projects = ["app"]             # optional: only these top-level folders of a root

[private]                        # can only add to the built-in private names
folders = []
patterns = []
"""


@click.command("init")
@passphrase_file_option
def init(passphrase_file: Path | None) -> None:
    """Write gateway.toml and context.toml templates and create the vault (first setup)."""
    paths = locate()
    ensure_private_dir(paths.config_dir)
    ensure_private_dir(paths.data_dir)
    for path, text in (
        (paths.gateway_config, GATEWAY_TEMPLATE),
        (paths.context_config, CONTEXT_TEMPLATE),
    ):
        if path.exists():
            click.echo(f"kept existing {path}")
            continue
        path.touch(mode=0o600)
        path.write_text(text, encoding="utf-8")
        click.echo(f"wrote {path}")
    if paths.vault_file.exists():
        click.echo(f"kept existing vault {paths.vault_file}")
    else:
        click.get_current_context().invoke(vault_cli.init, passphrase_file=passphrase_file)
    click.echo(
        "next: add credentials (`sp vault add`), declare them in gateway.toml, `sp policy check`, "
        "`sp gateway run`, `sp vault unlock`, `sp policy accept`, `sp client install CLIENT`"
    )
