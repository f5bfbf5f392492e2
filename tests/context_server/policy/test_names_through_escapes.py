"""A secret in a name is found through the escapes its display form writes: an escaped byte
before a key (a name that is not UTF-8, a control character) is not letters glued to it, and an
escaped invisible character inside a token does not split it. Judged on the display mapping,
and through the real server process as a client lists, searches and reads such names."""

from __future__ import annotations

import os
import secrets
import string
from pathlib import Path

import anyio
import pytest

from safeport.context_server.policy.display_names import (
    RedactedName,
    SecretInName,
    display_name,
    raw_name,
    written_name,
)
from tests.context_server.hostile import connected, result_text, server_params
from tests.context_server.listed import listed

ALNUM = string.ascii_letters + string.digits
WORD = "marrowbone"


def _aws() -> str:
    return "AKIA" + "".join(secrets.choice(string.ascii_uppercase + "234567") for _ in range(16))


def _github() -> str:
    return "ghp" + "_" + "".join(secrets.choice(ALNUM) for _ in range(36))


def _names(aws: str, github: str) -> list[bytes]:
    return [
        b"\xff" + aws.encode(),  # not UTF-8: shown as %FF, which must not glue onto the key
        b"\x01" + aws.encode() + b".csv",  # a control character, shown as %01
        b"\xc3" + github.encode(),  # a cut UTF-8 sequence
        (github[:7] + "\u200b" + github[7:]).encode(),  # a zero-width space inside a token
        (aws[:6] + "\u00ad" + aws[6:] + ".txt").encode(),  # a soft hyphen inside a key
        (github[:10] + "\u2066" + github[10:]).encode(),  # a bidirectional control inside
    ]


def _bodies(*tokens: str) -> list[str]:
    return [t[4:][i : i + 10] for t in tokens for i in range(0, len(t) - 13, 3)]


@pytest.mark.parametrize("which", range(6))
def test_a_secret_is_found_through_the_escapes_of_a_display_name(which: int) -> None:
    aws, github = _aws(), _github()
    raw = _names(aws, github)[which]
    shown = display_name(raw)
    assert "[REDACTED:" in shown, shown
    assert not any(body in shown for body in _bodies(aws, github)), shown
    with pytest.raises(RedactedName):
        raw_name(shown)
    # The name spelled out with its escapes is not a way in either.
    with pytest.raises(SecretInName):
        raw_name(written_name(raw))


@pytest.mark.parametrize(
    "raw",
    [b"%FF-notes.md", b"caf\xe9.txt", "r\u00e9sum\u00e9 \u200bdraft.md".encode(), b"\x01abc"],
)
def test_names_with_escapes_and_no_secret_show_and_read_as_written(raw: bytes) -> None:
    shown = display_name(raw)
    assert "[REDACTED:" not in shown
    assert raw_name(shown) == raw


@pytest.mark.anyio
async def test_no_reply_names_a_secret_hidden_behind_an_escape(tmp_path: Path) -> None:
    aws, github = _aws(), _github()
    root = tmp_path / "ws"
    home = tmp_path / "home"
    (root / "dumps").mkdir(parents=True)
    home.mkdir()
    (root / "README.md").write_text("readme\n")
    for i, raw in enumerate(_names(aws, github)):
        folder = os.path.join(os.fsencode(root / "dumps"), b"%d" % i)
        os.mkdir(folder)
        with open(os.path.join(folder, raw), "wb") as f:
            f.write(f"{WORD} {i}\n".encode())
    bodies = _bodies(aws, github)
    with (tmp_path / "stderr").open("w+") as errlog, anyio.fail_after(120):
        async with connected(server_params([root], home), errlog) as client:
            texts = []
            calls: list[tuple[str, dict[str, object]]] = [
                ("directory_tree", {"path": ".", "max_depth": 5}),
                ("search_files", {"pattern": "*"}),
                ("search_project", {"query": WORD, "limit": 50}),
                ("search", {"query": WORD}),
            ]
            for tool, args in calls:
                texts.append(result_text(await client.call_tool(tool, args)))
            for i in range(6):
                listing = await client.call_tool("list_directory", {"path": f"dumps/{i}"})
                texts.append(result_text(listing))
                entries = listed(listing.structured_content)
                assert len(entries) == 1, entries
                (name,) = entries
                assert "[REDACTED:" in name, name
                read = await client.call_tool("read_file", {"path": f"dumps/{i}/{name}"})
                assert read.structured_content["text"] == f"{WORD} {i}\n"
                texts.append(result_text(read))
        errlog.seek(0)
        texts.append(errlog.read())
    for text in texts:
        assert not any(body in text for body in bodies), text[:400]
