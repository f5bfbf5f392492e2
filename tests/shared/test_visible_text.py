"""Text from outside is rendered inert, by the one rule every renderer uses: the gateway's card,
`sp`'s card lines and process lines, `sp audit show`, and the rule's own functions."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from safeport.action_gateway.approvals.cards import build_card
from safeport.action_gateway.executors.prepare import prepare_ssh
from safeport.action_gateway.identity.model import PeerIdentity, ProcessInfo
from safeport.cli.app import sp
from safeport.cli.cards.card_text import card_lines
from safeport.shared.audit import JournalWriter
from safeport.shared.schemas.config import SshCommand, SshHost
from safeport.shared.visible_text import inert, inert_lines, visible
from tests.action_gateway.approvals.test_cards import ssh_request

# Characters a lax "printable" test lets through: a soft hyphen, a word joiner, a tag
# character and an interlinear annotation anchor; each hides or changes what a line shows.
HIDDEN = ["\u00ad", "\u2060", "\U000e0041", "\ufff9"]
ESCAPES = {"\u00ad": "\\u00ad", "\u2060": "\\u2060", "\U000e0041": "\\U000e0041",
           "\ufff9": "\\ufff9"}  # fmt: skip


@pytest.mark.parametrize(
    "char",
    ["\x1b", "\x07", "\x9b", "\u202e", "\u2066", "\u200b", "\u061c", "\u2028", "\u2029", "\ufeff"],
)
def test_control_bidi_and_separator_characters_are_escaped(char: str) -> None:
    rendered = inert(f"a{char}b")
    assert char not in rendered and rendered.startswith("a\\u") and rendered.endswith("b")


def test_ordinary_text_is_unchanged() -> None:
    assert inert("deploy-api: café ✓") == "deploy-api: café ✓"


def _gateway_card(text: str, _: Path) -> str:
    """What the gateway sends a control client: the requester's executable, made inert."""
    host = SshHost(address="203.0.113.7", user="d", credential="k", host_keys=["ssh-ed25519 A"])
    prepared = prepare_ssh("h", host, "c", SshCommand(argv=["uptime"]), {})
    peer = PeerIdentity(
        uid=1,
        gid=1,
        chain=(ProcessInfo(pid=5, start_time=1, uid=1, name="x", exe=text, exe_sha256=None),),
    )
    card = build_card("c-1", peer, ssh_request(prepared), now=0, timeout_s=10).view(0)
    return json.dumps(card.model_dump(), ensure_ascii=False)


def _cli_card(text: str, _: Path | None = None) -> str:
    """`sp approvals list`'s card: its id, a field and the requester's process line."""
    card = {"id": text, "fields": [["command", text]], "requester": [{"pid": 1, "exe": text}]}
    return "\n".join(card_lines(card, width=200))


def _audit_verify(text: str, home: Path) -> str:
    """`sp audit verify` of an audit folder holding a journal whose file name carries ``text``."""
    (home / "audit").mkdir()
    name = text.replace("/", "_")
    with JournalWriter(home / "audit" / f"{name}.jsonl") as writer:
        writer.append("read", {"n": 1})
    done = CliRunner().invoke(sp, ["audit", "verify"], env={"SAFEPORT_HOME": str(home)})
    assert done.exit_code == 0, done.output
    assert "journal: " in done.output
    return done.output


RENDERERS: dict[str, Callable[[str, Path], str]] = {
    "inert": lambda text, _: inert(text),
    "inert_lines": lambda text, _: inert_lines(text),
    "visible": lambda text, _: visible(text),
    "gateway card": _gateway_card,
    "sp card lines": _cli_card,
    "sp audit verify": _audit_verify,
}


@pytest.mark.parametrize("char", HIDDEN, ids=[f"U+{ord(c):04X}" for c in HIDDEN])
@pytest.mark.parametrize("renderer", RENDERERS, ids=list(RENDERERS))
def test_every_renderer_neutralises_each_hidden_character(
    renderer: str, char: str, tmp_path: Path
) -> None:
    shown = RENDERERS[renderer](f"/tmp/a{char}b", tmp_path)
    assert char not in shown
    assert ESCAPES[char] in shown


def test_inert_escapes_the_backslash_so_an_escape_typed_as_text_stays_distinguishable() -> None:
    assert inert("\u202e") == "\\u202e"
    assert inert("\\u202e") == "\\\\u202e"
    assert inert_lines("a\\b\nc") == "a\\\\b\nc"


def test_sp_shows_the_gateways_inert_text_as_the_gateway_rendered_it() -> None:
    # The gateway doubles the backslash; sp's second pass must not double it again.
    from_gateway = inert("C:\\tmp\u202e")
    assert from_gateway == "C:\\\\tmp\\u202e"
    assert visible(from_gateway) == from_gateway
    assert f"command     {from_gateway}" in _cli_card(from_gateway)
