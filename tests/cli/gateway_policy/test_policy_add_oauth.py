"""`sp policy add http --oauth PRESET` writes the service and its oauth credential together, in a
file `sp policy check` accepts; an unknown preset, a clash with a token credential or a client id
left out writes nothing."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from harness.gateway import REPO, clean_env
from safeport.action_gateway.oauth.presets import PRESETS
from safeport.shared.launch import sp_command
from safeport.shared.schemas.config import parse_gateway_policy
from tests.cli.terminal import Terminal
from tests.cli.test_help_and_errors import run

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.cli.gateway_policy.policy_draft"

EMPTY = "[gateway]\napproval_timeout_s = 120\n"


def _home(tmp_path: Path, text: str = EMPTY) -> Path:
    home = tmp_path / "h"
    home.mkdir(mode=0o700)
    (home / "gateway.toml").write_text(text)
    return home


def _checked(home: Path) -> dict[str, Any]:
    done = run(home, "policy", "check", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(done.stdout)
    assert isinstance(data, dict)
    return data


def _add(home: Path, *extra: str) -> Any:
    return run(
        home, "policy", "add", "http", "github", "--base-url", "https://api.github.com",
        "--operation", "get_issue=GET /repos/{owner}/{repo}/issues/{number}", *extra,
    )  # fmt: skip


def test_a_service_with_a_github_grant_passes_check_with_the_presets_scopes(
    tmp_path: Path,
) -> None:
    home = _home(tmp_path)
    done = _add(home, "--oauth", "github", "--client-id", "Iv1.0123456789abcdef")
    assert done.returncode == 0, done.stderr
    [service] = _checked(home)["http_services"]
    assert service["credential"] == "github-oauth"
    text = (home / "gateway.toml").read_text()
    assert text.startswith(EMPTY)
    policy = parse_gateway_policy(text)[0]
    credential = policy.credentials["github-oauth"]
    assert credential.kind == "oauth" and credential.oauth is not None
    assert credential.oauth.preset == "github"
    assert credential.oauth.client_id == "Iv1.0123456789abcdef"
    assert tuple(credential.oauth.scopes or ()) == PRESETS["github"].default_scopes
    assert policy.http.services["github"].auth == "bearer"
    assert "sp oauth connect github-oauth" in text


def test_scopes_given_replace_the_presets_defaults(tmp_path: Path) -> None:
    home = _home(tmp_path)
    done = _add(
        home, "--oauth", "github", "--client-id", "abc", "--scope", "read:user",
        "--scope", "public_repo", "--credential", "gh",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    oauth = tomllib.loads((home / "gateway.toml").read_text())["credentials"]["gh"]["oauth"]
    assert oauth["scopes"] == ["read:user", "public_repo"]
    _checked(home)


def test_an_unknown_preset_is_refused_naming_every_preset_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    home = _home(tmp_path)
    for wrong in ("githb", "GitHub", "", "github ", "../github"):
        done = _add(home, "--oauth", wrong, "--client-id", "abc")
        assert done.returncode != 0, wrong
        assert "is not a preset" in done.stderr, done.stderr
        for name in PRESETS:
            assert name in done.stderr
    assert (home / "gateway.toml").read_text() == EMPTY


def test_a_token_credential_of_the_same_name_is_never_taken_for_the_grant(
    tmp_path: Path,
) -> None:
    home = _home(tmp_path)
    token = _add(home)  # the plain form: a token credential named github-token
    assert token.returncode == 0, token.stderr
    before = (home / "gateway.toml").read_text()
    done = run(
        home, "policy", "add", "http", "github2", "--base-url", "https://api.github.com",
        "--operation", "me=GET /user", "--oauth", "github", "--client-id", "abc",
        "--credential", "github-token",
    )  # fmt: skip
    assert done.returncode != 0 and "not an oauth grant" in done.stderr, done.stderr
    assert (home / "gateway.toml").read_text() == before


def test_a_second_service_on_the_same_grant_declares_it_once(tmp_path: Path) -> None:
    home = _home(tmp_path)
    first = _add(home, "--oauth", "google", "--client-id", "abc.apps.googleusercontent.com",
                 "--credential", "google")  # fmt: skip
    assert first.returncode == 0, first.stderr
    second = run(
        home, "policy", "add", "http", "calendar", "--base-url", "https://www.googleapis.com",
        "--operation", "events=GET /calendar/v3/calendars/{calendar}/events",
        "--oauth", "google", "--client-id", "abc.apps.googleusercontent.com",
        "--credential", "google",
    )  # fmt: skip
    assert second.returncode == 0, second.stderr
    text = (home / "gateway.toml").read_text()
    assert text.count("[credentials.google]") == 1
    assert {s["credential"] for s in _checked(home)["http_services"]} == {"google"}


def test_a_credential_name_that_would_leave_its_header_is_refused(tmp_path: Path) -> None:
    home = _home(tmp_path)
    done = _add(home, "--oauth", "github", "--client-id", "abc", "--credential", "x]\n[gateway")
    assert done.returncode != 0 and "--credential" in done.stderr, done.stderr
    assert "is not a name" in done.stderr
    assert (home / "gateway.toml").read_text() == EMPTY


def test_without_a_terminal_a_missing_client_id_is_asked_for_by_its_flag(tmp_path: Path) -> None:
    home = _home(tmp_path)
    done = _add(home, "--oauth", "github")
    assert done.returncode != 0 and "--client-id ID" in done.stderr, done.stderr
    loose = _add(home, "--client-id", "abc")
    assert loose.returncode != 0 and "--oauth PRESET" in loose.stderr, loose.stderr
    assert (home / "gateway.toml").read_text() == EMPTY


def test_at_a_terminal_the_client_id_is_asked_then_the_rest(tmp_path: Path) -> None:
    home = _home(tmp_path)
    argv = sp_command(["policy", "add", "http", "tracker", "--oauth", "linear"])
    term = Terminal(argv, clean_env(home), str(REPO))
    term.expect("OAuth client id")
    term.type("lin-client-7")
    term.expect("base URL")
    term.type("https://api.linear.app")
    term.expect("operation as ID=METHOD /path")
    term.type("graphql=POST /graphql")
    term.expect("operation as ID=METHOD /path", times=2)
    term.type("")
    assert term.wait() == 0, term.seen
    assert "sp oauth connect tracker-oauth" in term.seen
    oauth = tomllib.loads((home / "gateway.toml").read_text())["credentials"]["tracker-oauth"]
    assert oauth["oauth"] == {
        "preset": "linear",
        "client_id": "lin-client-7",
        "client_auth": PRESETS["linear"].client_auth,
        "scopes": list(PRESETS["linear"].default_scopes),
    }
    [service] = _checked(home)["http_services"]
    assert service["credential"] == "tracker-oauth"
