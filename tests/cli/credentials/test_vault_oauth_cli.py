"""`sp vault` and an OAuth grant: the list shows its scopes and never a token; it is neither
added nor rotated by a paste (the provider issues its tokens: `sp oauth connect`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from safeport.vault.secrets import SecretBytes
from tests.cli.cli_runner import run_sp
from tests.vault.vault_factory import PASSPHRASE, make_vault

SUBJECT = "safeport.cli.credentials.vault"
REFRESH = b"CANARY-REFRESH-7e1f"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir(mode=0o700)
    (folder / "pass").write_bytes(PASSPHRASE + b"\n")
    _, vault = make_vault(folder)
    value: dict[str, SecretBytes | str] = {
        "refresh_token": SecretBytes(REFRESH),
        "scopes": "read:issues write:issues",
    }
    vault.add("tracker", "oauth", {**value, "issuer": "https://idp.example"})
    vault.lock()
    (folder / "value").write_bytes(b"CANARY-PASTED\n")
    return folder


def test_the_list_shows_a_grants_scopes_and_no_token(home: Path) -> None:
    pf = ("--passphrase-file", str(home / "pass"))
    shown = run_sp("vault", "list", *pf, home=home)
    assert shown.returncode == 0, shown.stderr
    (line,) = [line for line in shown.stdout.splitlines() if line.startswith("tracker")]
    assert "oauth" in line and line.endswith("scopes read:issues write:issues")
    listed = json.loads(run_sp("vault", "list", *pf, "--json", home=home).stdout)
    by_name = {entry["name"]: entry for entry in listed}
    assert by_name["tracker"]["scopes"] == ["read:issues", "write:issues"]
    assert "scopes" not in by_name["deploy-token"]
    assert "CANARY" not in shown.stdout + shown.stderr + json.dumps(listed)


@pytest.mark.parametrize(
    ("command", "said"),
    [
        (("vault", "add", "other", "--kind", "oauth"), "'oauth' is not one of"),
        (("vault", "rotate", "tracker"), "reconnect it: `sp oauth connect tracker`"),
        (("vault", "rotate", "tracker", "--kind", "oauth"), "'oauth' is not one of"),
    ],
)
def test_a_grant_is_never_pasted(home: Path, command: tuple[str, ...], said: str) -> None:
    pf = ("--passphrase-file", str(home / "pass"), "--value-file", str(home / "value"))
    done = run_sp(*command, *pf, home=home)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert said in done.stderr and "CANARY" not in done.stdout + done.stderr
    listed = run_sp("vault", "list", "--passphrase-file", str(home / "pass"), home=home).stdout
    assert "other" not in listed and "scopes read:issues write:issues" in listed


def test_removing_a_grant_with_no_gateway_running_says_it_was_not_revoked(home: Path) -> None:
    done = run_sp("vault", "remove", "tracker", "--passphrase-file", str(home / "pass"), home=home)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "removed tracker"
    assert "not revoked at its provider: no gateway is running" in done.stderr
    plain = run_sp(
        "vault", "remove", "deploy-token", "--passphrase-file", str(home / "pass"), home=home
    )
    assert plain.returncode == 0 and plain.stderr == ""
