"""The forged-line test of test_http_forged_card_fields_e2e.py with the characters a terminal or
a bidi algorithm acts on beyond ASCII's controls, through the same real gateway and
`sp context serve --http`: C1 controls (NEL; CSI, which a terminal obeys like ``ESC [``), a
directional isolate, the Arabic letter mark, a byte order mark, a variation selector, a
combining accent and a tag character. Its own gateway: at most 16 authorizations wait at once,
and each case leaves one waiting until it expires. Also: half a surrogate pair in a name,
which JSON can escape but no UTF-8 frame can carry, is a 400, not a server error."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from harness.http_context import HttpServer
from harness.remote_flow import REDIRECT_URI, register_by_hand
from tests.context_server.http.test_http_forged_card_fields_e2e import (
    home,
    server,
)
from tests.context_server.http.test_http_forged_card_fields_e2e import (
    test_a_forged_line_in_a_clients_name_stays_inside_its_own_line_everywhere as forged_line,
)

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.context_server.http"

__all__ = ["home", "server"]  # the module's own gateway and server (module-scoped fixtures)

MORE_BREAKERS = ("\x85", "\x9b2K", "\u2066", "\u061c", "\ufeff", "\ufe0f", "\u0301", "\U000e0041")


@pytest.mark.parametrize(
    "breaker", MORE_BREAKERS, ids=[f"U+{ord(b[0]):04X}" for b in MORE_BREAKERS]
)
def test_a_c1_control_isolate_mark_or_tag_in_a_name_stays_inside_its_own_line_everywhere(
    home: Path, server: HttpServer, breaker: str
) -> None:
    forged_line(home, server, breaker)


@pytest.mark.parametrize("half", ["\\ud800", "\\udfff", "x\\ud83d"])
def test_a_name_holding_half_a_surrogate_pair_is_refused_and_the_server_goes_on(
    home: Path, server: HttpServer, half: str
) -> None:
    body = '{"client_name": "A' + half + 'B", "redirect_uris": ["' + REDIRECT_URI + '"]}'
    refused = httpx.post(
        server.url + "/register",
        content=body.encode("ascii"),
        headers={"content-type": "application/json"},
        timeout=30,
    )
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"] == "invalid_request"
    # A whole pair is a character like any other, and the server still registers.
    assert register_by_hand(server.url, "A\U0001f600B")
