"""`sp oauth connect NAME`: connect an OAuth grant the gateway will hold.

The human runs it; the gateway does the protocol. `sp` proves the vault passphrase, shows the
scopes asked for, then either opens the provider's page in a browser and relays the one
callback its loopback listener receives (RFC 8252: ``http://127.0.0.1:PORT/callback``), or, with
``--device``, prints the code to enter and where (RFC 8628) and waits. No token ever reaches
`sp`: the gateway keeps the refresh token in the vault and answers with the scopes granted.
"""

from __future__ import annotations

import base64
import json
import time
import webbrowser
from pathlib import Path
from typing import Any

import click

from safeport.cli.options import passphrase_file_option
from safeport.cli.secret_input import ask_secret, one_stdin
from safeport.errors import UsageError
from safeport.gateway_client.control_socket import GatewayClient
from safeport.gateway_client.loopback_callback import LoopbackCallback
from safeport.shared.paths import locate
from safeport.shared.schemas import operations as ops
from safeport.shared.schemas.grant_wire import (
    MAX_DEVICE_WAIT_S,
    OAuthBegunResult,
    OAuthConnectedResult,
    OAuthDeviceStateResult,
)
from safeport.shared.visible_text import inert
from safeport.vault.secrets import SecretBytes


@click.group()
def oauth() -> None:
    """OAuth grants the gateway holds (it refreshes their tokens; agents never see them).

    \b
    Examples:
      sp oauth connect tracker
      sp oauth connect github --device --no-browser
    """


@oauth.command()
@click.argument("name")
@click.option("--device", is_flag=True, help="Use the device flow (a code to enter elsewhere).")
@click.option("--no-browser", is_flag=True, help="Print the URL to open instead of opening it.")
@click.option(
    "--timeout",
    "timeout_s",
    type=click.IntRange(10, 1800),
    metavar="SECONDS",
    default=300,
    show_default=True,
    help="Seconds to wait for the human's answer.",
)
@click.option(
    "--client-secret-file",
    type=click.Path(path_type=Path, dir_okay=False, allow_dash=True),
    help="A confidential client's secret, from FILE (- for stdin).",
)
@passphrase_file_option
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def connect(
    name: str,
    device: bool,
    no_browser: bool,
    timeout_s: int,
    client_secret_file: Path | None,
    passphrase_file: Path | None,
    as_json: bool,
) -> None:
    """Connect the oauth credential NAME of the accepted policy.

    \b
    Examples:
      sp oauth connect tracker
      sp oauth connect github --device
    """
    one_stdin(passphrase_file, client_secret_file)
    passphrase = ask_secret(passphrase_file, what="vault passphrase", option="--passphrase-file")
    params: dict[str, Any] = {"name": name}
    if client_secret_file is not None:
        secret = ask_secret(client_secret_file, what="client secret", option="--client-secret-file")
        params["client_secret_b64"] = base64.b64encode(secret.reveal()).decode("ascii")
        secret.wipe()
    deadline = time.monotonic() + timeout_s
    result: OAuthConnectedResult | OAuthDeviceStateResult
    with GatewayClient(locate(), timeout=60) as client:
        if device:
            begun = _begin(client, passphrase, params, device=True)
            result = _device(client, begun, deadline)
        else:
            with LoopbackCallback() as listener:
                params["redirect_uri"] = listener.redirect_uri
                begun = _begin(client, passphrase, params, device=False)
                query = _browser(listener, begun, deadline, no_browser=no_browser)
            result = client.call(ops.OAUTH_FINISH, flow_id=begun.flow_id, query=query)
    if as_json:
        click.echo(json.dumps({"name": result.name, "scopes": result.scopes or []}, indent=2))
        return
    scopes = " ".join(result.scopes or []) or "(none named)"
    click.echo(inert(f"connected {result.name} with scopes {scopes}"))


def _begin(
    client: GatewayClient, passphrase: SecretBytes, params: dict[str, Any], *, device: bool
) -> OAuthBegunResult:
    try:
        begun = client.call_with_passphrase(ops.OAUTH_BEGIN, passphrase, device=device, **params)
    finally:
        passphrase.wipe()
    # The scopes asked for are shown before anything is opened or entered.
    click.echo(inert(f"scopes: {' '.join(begun.scopes) or '(the provider default)'}"), err=True)
    return begun


def _browser(
    listener: LoopbackCallback, begun: OAuthBegunResult, deadline: float, *, no_browser: bool
) -> dict[str, str]:
    url = begun.authorization_url
    if url is None:
        raise UsageError("the gateway started no code flow")
    click.echo(inert(f"open: {url}"), err=True)
    if not no_browser:
        webbrowser.open(url)
    click.echo("waiting for the browser's answer…", err=True)
    return listener.wait(deadline)


def _device(
    client: GatewayClient, begun: OAuthBegunResult, deadline: float
) -> OAuthDeviceStateResult:
    if begun.user_code is None or begun.verification_uri is None:
        raise UsageError("the gateway started no device flow")
    click.echo(inert(f"code: {begun.user_code}"), err=True)
    click.echo(inert(f"visit: {begun.verification_uri}"), err=True)
    if begun.verification_uri_complete:
        click.echo(inert(f"or open: {begun.verification_uri_complete}"), err=True)
    while True:
        left = int(deadline - time.monotonic())
        if left < 1:
            raise UsageError("no answer in time; run `sp oauth connect` again")
        wait_s = min(MAX_DEVICE_WAIT_S, left)
        # The gateway polls at the provider's interval for up to wait_s, then answers.
        client.settimeout(wait_s + 60)
        state = client.call(ops.OAUTH_DEVICE_WAIT, flow_id=begun.flow_id, wait_s=wait_s)
        if state.state == "connected":
            return state
