"""Known secrets in every form a reply can carry them, and the one way messages are cut.

An attacker who controls what a backend returns (a row, a body, a command's output, an error
quoting a value) chooses the encoding and where a cut lands; each test tries several and keeps
one legitimate value beside them that must pass unchanged.
"""

from __future__ import annotations

import base64
import json
import time
from urllib.parse import quote

import pytest

from safeport.shared.known_secrets import KnownSecrets, first_line, secret_forms, shorten

SECRET = "Xq7-vP2mL9sRt4ZwYb8N"
RAW = SECRET.encode()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.mark.parametrize(
    "value",
    [
        RAW,  # a bytea value as the server sent it
        _b64(RAW),  # ... and as the reply encodes it
        "row:" + _b64(b"x" + RAW + b"tail"),  # inside a longer encoded value, offset 1
        _b64(b"xy" + RAW),  # offset 2
        base64.urlsafe_b64encode(b"\xff\xfe" + RAW).decode().rstrip("="),
        RAW.hex(),  # encode(x, 'hex')
        RAW.hex().upper(),
        "\\x" + RAW.hex(),  # bytea's own text output
        json.dumps({"pw": SECRET}).replace("q", "\\u0071"),  # JSON with escapes
        json.dumps(SECRET, ensure_ascii=True),
        quote(SECRET, safe=""),
        "".join(f"%{byte:02X}" for byte in RAW),  # every byte percent-encoded
        ["a", ["b", SECRET]],  # an array column, nested
        {SECRET: 1},  # a key of a json value
        [SECRET[:9], SECRET[9:]],  # split across two neighbouring values
        [b"\x00" + RAW[:8], RAW[8:]],  # split, one half raw bytes
        SECRET[2:18],  # any 16-character run of it
        SECRET.encode("utf-16-le").decode("ascii"),  # UTF-16: a NUL after every character
        SECRET.encode("utf-16-be").hex(),
        "".join(f"\\{byte:03o}" for byte in RAW),  # octal escapes (bytea's escape format)
        json.dumps(base64.encodebytes(b"y" * 50 + RAW).decode()),  # wrapped base64 in JSON
        ", ".join(f"0x{byte:02x}" for byte in RAW),  # xxd -i
        "  ".join(f"{byte:02x}" for byte in RAW),  # bytes two spaces apart
    ],
)
def test_the_secret_is_found_in_every_form_the_reply_can_carry(value: object) -> None:
    assert KnownSecrets([SECRET]).found_in_value(value)


def test_a_password_with_json_specials_is_found_escaped() -> None:
    secret = 'pa"ss\\word\n-with-quotes'
    escaped = json.dumps({"v": secret})
    assert secret not in escaped
    assert KnownSecrets([secret]).found_in_value(escaped)


@pytest.mark.parametrize(
    "value",
    [
        ["an order", 12, None, b"\x00\x01binary", {"state": "ok"}],
        _b64(b"an ordinary binary value, longer than sixteen bytes"),
        RAW[:15].hex(),  # fewer than 16 bytes of it: shared short runs are not the secret
        SECRET[::-1],  # reversed: a transformation nobody can list (a documented limit)
    ],
)
def test_values_that_do_not_carry_the_secret_pass(value: object) -> None:
    assert not KnownSecrets([SECRET]).found_in_value(value)


def _xxd(data: bytes, per_line: int) -> str:
    """``xxd -c per_line`` output: offset, 2-byte groups, the bytes as characters."""
    lines = []
    for start in range(0, len(data), per_line):
        chunk = data[start : start + per_line]
        groups = " ".join(chunk[i : i + 2].hex() for i in range(0, len(chunk), 2))
        width = per_line * 2 + (per_line + 1) // 2 - 1
        chars = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{start:08x}: {groups.ljust(width)}  {chars}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("per_line", [4, 7, 8, 16])
@pytest.mark.parametrize("offset", [0, 1, 3, 6, 13])
def test_a_dump_split_over_lines_is_read_whole(per_line: int, offset: int) -> None:
    """Whichever line the secret starts on; the character column (here hex-like: ``cafe``)
    left out of the bytes."""
    assert KnownSecrets([SECRET]).found_in(_xxd(b"cafe" * 4 + b"x" * offset + RAW, per_line))


def test_a_dump_of_other_bytes_and_hex_like_text_pass() -> None:
    ordinary = _xxd(bytes(range(256)) + RAW[:15] + b"cafe" * 8, 8)
    assert not KnownSecrets([SECRET]).found_in(ordinary)
    assert not KnownSecrets([SECRET]).found_in("2024 was a year\n  ab cd ef 12 34 56 78 90\n")


def test_no_known_secret_finds_nothing() -> None:
    assert not KnownSecrets([]).found_in_value(SECRET)
    assert not KnownSecrets([""]).found_in_value(SECRET)


def _cut_inside(form: str, keep: int, limit: int) -> str:
    """A message whose cut at ``limit`` lands ``keep`` characters into ``form``."""
    return "x" * (limit - 1 - keep) + form + " and more after it"


@pytest.mark.parametrize("form", sorted(secret_forms([SECRET])))
@pytest.mark.parametrize("keep", [1, 4, 16])
def test_a_cut_inside_any_form_of_the_secret_leaves_none_of_it(form: str, keep: int) -> None:
    limit = 120
    text = _cut_inside(form, keep, limit)
    assert text[: limit - 1].endswith(form[:keep])  # the cut the attacker aimed
    short = shorten(text, limit, [SECRET])
    assert len(short) <= limit and short.endswith("…")
    body = short.removesuffix("…")
    assert not any(body.endswith(f[:n]) for f in secret_forms([SECRET]) for n in range(1, 17))
    assert "x" * 20 in body  # the rest of the message is kept


def test_a_whole_secret_is_redacted_before_the_cut_and_the_message_kept() -> None:
    text = f'invalid input syntax for type integer: "{SECRET}"'
    assert shorten(text, 300, [SECRET]) == ('invalid input syntax for type integer: "[REDACTED]"')
    hexed = f"value {RAW.hex()} refused"
    assert shorten(hexed, 300, [SECRET]) == "value [REDACTED] refused"


def test_a_message_holding_the_secret_in_an_unlisted_form_is_withheld_whole() -> None:
    # Base64 broken into short MIME-like lines: no listed form appears as it is.
    encoded = _b64(b"prefix bytes " + RAW + b" suffix")
    text = "refused: " + "\n".join(encoded[i : i + 7] for i in range(0, len(encoded), 7))
    assert "withheld" in shorten(text, 300, [SECRET])


def test_an_unknown_secret_the_detector_knows_is_redacted_before_the_cut() -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    text = "x" * 90 + token
    short = shorten(text, 100)
    assert "ghp_" not in short and "a1B2" not in short


def test_ordinary_messages_are_cut_as_before() -> None:
    assert shorten("short", 300, [SECRET]) == "short"
    long = "the query ran into a problem " * 20
    short = shorten(long, 100, [SECRET])
    assert short == long[:99] + "…"
    assert shorten("", 10) == ""


def test_a_cards_environment_line_cut_inside_a_token_shows_none_of_it() -> None:
    """The requester's injected environment values are shown on the card, bounded: a token
    the cut would split is redacted whole first."""
    from safeport.action_gateway.identity.peer_environment import bounded

    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    shown = bounded("/opt/lib/preload.so:" + "x" * 170 + token + ":/more" * 20)
    assert "ghp_" not in shown and "a1B2" not in shown
    assert shown.startswith("/opt/lib/preload.so:") and "more characters" in shown


@pytest.mark.parametrize("encoding", ["latin-1", "utf-16-le", "utf-16-be"])
def test_a_password_not_in_ascii_is_found_in_the_encodings_a_server_converts_to(
    encoding: str,
) -> None:
    wide = "pässwörd-für-dïe-äpp"
    data = wide.encode(encoding)
    assert KnownSecrets([wide]).found_in_value(data)
    assert KnownSecrets([wide]).found_in(data.hex())
    assert KnownSecrets([wide]).found_in(_b64(b"x" + data))
    assert not KnownSecrets([wide]).found_in(_b64(b"x" + data[:7]))


@pytest.mark.parametrize("keep", [1, 9, 15])
def test_a_first_line_ending_inside_the_secret_loses_its_start(keep: int) -> None:
    text = f'refused: "{SECRET[:keep]}\n{SECRET[keep:]}"\nDETAIL: more'
    assert first_line(text, 300, [SECRET]) == 'refused: "'
    assert first_line("refused: 12\nDETAIL: more", 300, [SECRET]) == "refused: 12"
    assert first_line(f"refused: {SECRET}", 300, [SECRET]) == "refused: [REDACTED]"


# Its base64 has `/` and `+` in it, which URLs and HTML encoders escape.
SLASHED = "Zq?>~Kp9?>~mW3?>~xR7"


@pytest.mark.parametrize("offset", [0, 1, 2])
def test_base64_escaped_for_a_url_or_html_is_found(offset: int) -> None:
    encoded = _b64(b"x" * offset + SLASHED.encode())
    assert "/" in encoded or "+" in encoded
    search = KnownSecrets([SLASHED])
    assert search.found_in("https://example.test/cb?auth=" + quote(encoded, safe="") + "&x=1")
    assert search.found_in(encoded.replace("/", "&#x2F;").replace("+", "&#x2B;"))
    assert search.found_in(quote(quote(encoded, safe=""), safe=""))  # encoded twice


@pytest.mark.parametrize(
    "hostile",
    [
        "0000 x" + " " * 200_000 + "y",  # a dump line's blanks, once retried at each blank
        "0000 ab |" + "|" * 200_000 + " x",
        "0000000" + "   C" * 50_000 + "y",
        ("ab" + " " * 1000) * 200,
        "%" * 200_000,
        "\\" * 200_000 + "u",
    ],
    ids=["blanks", "bars", "od-c", "spaced-hex", "percent", "backslashes"],
)
def test_a_hostile_line_costs_its_length_not_its_square(hostile: str) -> None:
    # The first took 14 s at 40,000 blanks (quadratic); linear, 200,000 take well under one.
    started = time.perf_counter()
    assert not KnownSecrets([SECRET]).found_in(hostile)
    assert time.perf_counter() - started < 10
