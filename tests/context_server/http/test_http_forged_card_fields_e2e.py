"""End to end (the real gateway and `sp context serve --http`): a stranger registers a client whose
name carries a line break, a carriage return, an ANSI escape, a Unicode line separator, a bidi
override, a zero-width space, a NUL or a tab, and starts an authorization. Wherever the human
reads the card -- the waiting page in the browser, `sp approvals list`, its `--json`, the
journal through `sp audit show` -- the name stays on its own line with every such character
written as an escape: it can never print a field (``redirect: chatgpt.com``) of its own.
The legitimate client, on the same path, reads as itself."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import httpx
import pytest

from harness.gateway import REPO, clean_env
from harness.http_context import HttpServer, http_server
from harness.remote_flow import REDIRECT_URI, register_by_hand, sp
from safeport.cli.render import columns
from safeport.shared.visible_text import needs_escape
from tests.context_server.http.real_gateway import real_gateway
from tests.context_server.test_server import small_workspace

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.context_server.http"

FORGED = "redirect: chatgpt.com"
# Each a way to make text look like more (or other) than it is on a screen.
BREAKERS = ("\n", "\r", "\x1b[2K\x1b[1G", "\u2028", "\u2029", "\u202e", "\u200b", "\x00", "\t")


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("gw")
    home.chmod(0o700)
    with real_gateway(home):
        yield home


@pytest.fixture(scope="module")
def server(home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    root, _ = small_workspace(tmp_path_factory.mktemp("ws"))
    with http_server(home, root, client=True) as running:
        yield running


def waiting_page(server: HttpServer, client_id: str) -> str:
    """The browser's page of a new authorization of ``client_id`` (its card now waits)."""
    digest = hashlib.sha256(secrets.token_urlsafe(48).encode()).digest()
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT_URI,
        "code_challenge": base64.urlsafe_b64encode(digest).rstrip(b"=").decode(),
        "code_challenge_method": "S256",
        "state": "s",
        "resource": server.url + "/mcp",
    }
    page = httpx.get(server.url + "/authorize?" + urlencode(query), timeout=30)
    assert page.status_code == 200, page.text
    return page.text


def shown_safely(text: str) -> bool:
    """Nothing in ``text`` but characters a person sees as themselves, and real line breaks
    (where a line break may stand, the tests check no line starts with the forged field)."""
    return not any(needs_escape(char) for char in text.replace("\n", ""))


@pytest.mark.parametrize("breaker", BREAKERS, ids=[f"U+{ord(b[0]):04X}" for b in BREAKERS])
def test_a_forged_line_in_a_clients_name_stays_inside_its_own_line_everywhere(
    home: Path, server: HttpServer, breaker: str
) -> None:
    name = f"X{breaker}{FORGED}"
    client_id = register_by_hand(server.url, name)
    page = waiting_page(server, client_id)
    assert "\n" not in page.partition("<body")[2] and shown_safely(page)
    assert "127.0.0.1:9" in page  # the real redirect host, as the card shows it

    listed = sp(home, "approvals", "list").stdout
    assert shown_safely(listed)
    lines = listed.splitlines()
    # The action line keeps the whole name (escaped); no line of the card starts with the
    # forged label, and the one real redirect field names the registered host.
    [action] = [line for line in lines if line.startswith("action ")]
    assert "oauth_client X\\" in action and FORGED in action
    assert not any(line.startswith(("redirect:", "redirect: ")) for line in lines)
    assert [line.split()[1] for line in lines if line.startswith("redirect ")] == ["127.0.0.1:9"]

    cards = json.loads(sp(home, "approvals", "list", "--json").stdout)
    [card] = [c for c in cards if c["action"] == "oauth_client"]
    texts = [card["target"], *(value for _, value in card["fields"])]
    assert all("\n" not in text and shown_safely(text) for text in texts)
    assert card["target"] == dict(card["fields"])["client"]  # one escaping, one text

    sp(home, "approvals", "deny", card["id"], "--passphrase-file", str(home / "pw"))
    unseal = ("--journal", "sessions", "--passphrase-file", str(home / "pw"))
    assert shown_safely(sp(home, "audit", "show", *unseal).stdout)
    # JSON Lines: one record a line, the name kept whole (the journal records what was asked).
    records = [
        json.loads(line)
        for line in sp(home, "audit", "show", "--json", *unseal).stdout.splitlines()
    ]
    assert name in [
        r["body"].get("name") for r in records if r["kind"] == "oauth.client_registered"
    ]


def test_a_plain_clients_name_reads_as_itself_on_the_page_and_the_card(
    home: Path, server: HttpServer
) -> None:
    client_id = register_by_hand(server.url, "Claude")
    assert "<b>Claude</b>" in waiting_page(server, client_id)
    listed = sp(home, "approvals", "list").stdout.splitlines()
    assert any(
        line.split() == ["action", "oauth_client", "Claude", "/", "authorize"] for line in listed
    )
    [card] = json.loads(sp(home, "approvals", "list", "--json").stdout)
    assert card["target"] == "Claude" and dict(card["fields"])["redirect"] == "127.0.0.1:9"
    sp(home, "approvals", "deny", card["id"], "--passphrase-file", str(home / "pw"))


# Padded with spaces to the width of a terminal, then text laid out as a row of the list: the
# terminal's own wrap (which shows no mark) would start a line with the forged row.
PADDED = (
    "X" + " " * 60 + "redirects   chatgpt.com",
    "X" + " " * 50 + "    redirect hosts: chatgpt.com",
)


@pytest.mark.parametrize("name", PADDED, ids=["card-layout", "old-layout"])
def test_a_name_padded_to_wrap_a_terminal_line_prints_no_row_of_the_client_list(
    home: Path, server: HttpServer, name: str
) -> None:
    assert len(name) <= 100  # what /register accepts
    register_by_hand(server.url, name)
    for bad in BREAKERS:
        register_by_hand(server.url, f"X{bad}{FORGED}")
    listed = subprocess.run(
        [sys.executable, "-m", "safeport", "context", "clients", "list"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env={**clean_env(home), "COLUMNS": "80"},
        check=True,
    ).stdout
    lines = listed.splitlines()
    assert shown_safely(listed)
    # No line wider than the terminal (so none is wrapped by it), and every row that names
    # where a client's codes go is the real one.
    assert all(columns(line) <= 80 for line in lines)
    redirects = [line for line in lines if line.lstrip().startswith("redirect")]
    assert redirects and set(redirects) == {"redirects   127.0.0.1:9"}
    assert any(line.startswith("name        X") for line in lines)
