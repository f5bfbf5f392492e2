"""Keys written as bytes under a secret-like name, in every language that writes them so: a
list of at least eight numbers, or eight ``\\x`` escapes, is withheld whole. Short lists, plain
sequences, one repeated value, and lists under names that hold no secret stay served."""

from __future__ import annotations

import secrets

import pytest

from safeport.shared.secret_scan import find_secrets

KIND = "secret-bytes"


def key_bytes(count: int = 16) -> list[int]:
    while True:
        values = [secrets.randbelow(256) for _ in range(count)]
        if len(set(values)) >= 4:
            return values


def hexes(values: list[int]) -> str:
    return ", ".join(f"0x{v:02x}" for v in values)


def decimals(values: list[int]) -> str:
    return ", ".join(str(v) for v in values)


def assert_withheld(text: str, first: str, last: str, *, after: int = 0) -> None:
    """One span from ``first`` (found at or past ``after``: a number may also be written
    before the list, as in ``[u8; 16]``) to the last ``last``."""
    spans = find_secrets(text)
    assert [s.kind for s in spans] == [KIND], text
    assert spans[0].start == text.index(first, after), text
    assert spans[0].end == text.rindex(last) + len(last), text


@pytest.mark.parametrize(
    "template",
    [
        "#define AESKEY {{{items}}}\n",
        "#define HMAC_SECRET {{ {items} }}\n",
        "static const unsigned char key[] = {{{items}}};\n",
        "uint8_t master_key[16] = {{{items}}};\n",
        "\tSecret: []byte{{{items}}},\n",
        "signingKey := []byte{{{items}}}\n",
        "byte[] key = new byte[]{{{items}}};\n",
        "private static final byte[] SECRET_KEY = new byte[] {{ {items} }};\n",
        "key = bytes([{items}])\n",
        "salt = bytearray([{items}])\n",
        "let key: [u8; 16] = [{items}];\n",
        "const apiKey = new Uint8Array([{items}]);\n",
        "encryption_key = [{items}]\n",
    ],
)
@pytest.mark.parametrize("spell", [hexes, decimals])
def test_a_key_written_as_numbers_is_withheld(template: str, spell: object) -> None:
    values = key_bytes()
    items = spell(values)  # type: ignore[operator]
    text = template.format(items=items)
    assert_withheld(text, items.split(", ")[0], items.split(", ")[-1], after=text.index(items))


def test_a_list_continued_over_lines_is_withheld_whole() -> None:
    values = key_bytes(16)
    first, second = hexes(values[:8]), hexes(values[8:])
    text = f"#define DEVICE_KEY {{{first}, \\\n    {second}}}\nint other = 3;\n"
    assert_withheld(text, first.split(", ")[0], second.split(", ")[-1])


def test_java_byte_casts_are_read_through() -> None:
    values = key_bytes(8)
    items = ", ".join(f"(byte) 0x{v:02x}" for v in values)
    text = f"byte[] secret = {{{items}}};\n"
    assert_withheld(text, f"0x{values[0]:02x}", f"0x{values[-1]:02x}")


@pytest.mark.parametrize("prefix", ["b", "B"])
def test_an_escaped_byte_string_is_withheld(prefix: str) -> None:
    body = "".join(f"\\x{v:02x}" for v in key_bytes(12))
    text = f'salt = {prefix}"{body}"\n'
    spans = find_secrets(text)
    at = text.index(body)
    assert [(s.start, s.end, s.kind) for s in spans] == [(at, at + len(body), KIND)]


@pytest.mark.parametrize(
    "line",
    [
        "key = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]\n",
        "key = [0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80]\n",
        "key = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]\n",
        "secret = [4, 9, 200, 17]\n",
        "keys = [3, 9, 1, 7, 4, 8, 2, 6, 5]\n",
        "key_sizes = [128, 192, 256, 512, 64, 32, 16, 8]\n",
        "token_ids = [101, 2023, 3, 7, 9, 11, 44, 5, 6]\n",
        "offsets = {12, 250, 7, 99, 140, 33, 201, 8, 66};\n",
        "key = {1: 2, 3: 4}\n",
        'salt = b"\\x01\\x02abc"\n',
        'banner = b"\\x9c\\x12\\x4e\\xa7\\x30\\xd5\\x6b\\x81"\n',
    ],
)
def test_look_alikes_stay_served(line: str) -> None:
    assert find_secrets(line) == [], line
