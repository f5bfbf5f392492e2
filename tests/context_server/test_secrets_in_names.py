"""A secret in a file or folder name never leaves the context server: listings, trees, globs,
searches (paths, ids and urls), reads, errors, the audit trail, the reads journal and the index
on disk all show the name with the detector's marker, and the file is still read by that form.
Names that merely look random (a commit id, a UUID, a hash) are shown as written.

Driven through the real server process over stdio, as a client sees it."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import string
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.context_server.hostile import connected, result_text, server_params
from tests.context_server.listed import listed

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.context_server"

pytestmark = pytest.mark.anyio

ALNUM = string.ascii_letters + string.digits
WORD = "quillfeather"  # in every file, so every path comes back from a search


def _random(alphabet: str, size: int) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(size))


def _b64(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


@dataclass(frozen=True)
class Tokens:
    """Tokens made fresh for each run, so none is written anywhere in the repository."""

    github: str
    github_other: str
    aws: str
    slack: str
    jwt: str
    stripe: str

    @classmethod
    def fresh(cls) -> Tokens:
        return cls(
            github="ghp" + "_" + _random(ALNUM, 36),
            github_other="ghp" + "_" + _random(ALNUM, 36),
            aws="AKIA" + _random(string.ascii_uppercase + "234567", 16),
            slack="xoxb-" + _random(string.digits, 11) + "-" + _random(string.digits, 12) + "-"
            + _random(ALNUM, 24),
            jwt=_b64({"alg": "HS256", "typ": "JWT"}) + "." + _b64({"sub": _random(ALNUM, 8)})
            + "." + _random(ALNUM + "-_", 43),
            stripe="sk" + "_live_" + _random(ALNUM, 24),
        )  # fmt: skip

    def all(self) -> list[str]:
        return [self.github, self.github_other, self.aws, self.slack, self.jwt, self.stripe]


def leaks(text: str | bytes, tokens: Tokens) -> list[str]:
    """Each token any 12-character piece of whose random part is in ``text``."""
    data = text.encode() if isinstance(text, str) else text
    found = []
    for token in tokens.all():
        body = token[4:]  # past every prefix: the random part is what must not show
        if any(body[i : i + 12].encode() in data for i in range(len(body) - 11)):
            found.append(token[:4])
    return found


SHA1 = hashlib.sha1(b"a commit").hexdigest()
SHA256 = hashlib.sha256(b"a cache entry").hexdigest()
RUN_ID = str(uuid.uuid4())
LEGIT = [f"objects/{SHA1}/info.txt", f"runs/{RUN_ID}.txt", f"cache/{SHA256}.txt"]


def secret_workspace(base: Path, tokens: Tokens) -> tuple[Path, Path, dict[str, str]]:
    """A workspace whose names hold secrets, and the path each file is shown at -> its text."""
    root = base / "ws"
    files = {
        # a folder name holding a token, glued to a longer name
        (f"snapshot-{tokens.github}", "notes.md"): "snapshot-[REDACTED:github-token]/notes.md",
        # a file name, glued on both sides
        ("keys", f"creds_{tokens.aws}.md"): "keys/creds_[REDACTED:aws-access-key-id].md",
        ("keys", f"dump_{tokens.slack}.txt"): "keys/dump_[REDACTED:slack-token].txt",
        # the whole name, and a token in the extensions
        ("tokens", f"{tokens.jwt}.json"): "tokens/[REDACTED:jwt].json",
        ("tokens", f"report.{tokens.stripe}.txt"): "tokens/report.[REDACTED:stripe-key].txt",
        # beside bytes that are not UTF-8 (escaped as %XX)
        ("odd", f"caf\udce9-{tokens.github_other}.md"): "odd/caf%E9-[REDACTED:github-token].md",
    }
    shown: dict[str, str] = {}
    for parts, display in files.items():
        path = root.joinpath(*parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{WORD} {display}\n")
        shown[display] = f"{WORD} {display}\n"
    for legit in LEGIT:
        path = root / legit
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{WORD} {legit}\n")
        shown[legit] = f"{WORD} {legit}\n"
    (root / "latest").symlink_to(f"snapshot-{tokens.github}")
    # listed (blocked by its type) but never read: the token is the whole extension
    (root / "tokens" / f"report.{tokens.github_other}").write_text(f"{WORD}\n")
    home = base / "home"
    home.mkdir(mode=0o700)
    return root, home, shown


async def _calls(client: Client, shown: dict[str, str], tokens: Tokens) -> list[Any]:
    """Every tool that names a workspace path, as an agent would call them."""
    results = []

    async def call(tool: str, args: dict[str, Any]) -> Any:
        result = await client.call_tool(tool, args)
        results.append(result)
        return result

    await call("list_roots", {})
    for folder in (".", "keys", "tokens", "snapshot-[REDACTED:github-token]", "latest"):
        listing = await call("list_directory", {"path": folder})
        assert not listing.is_error, (folder, listing.content)
    await call("directory_tree", {"path": ".", "max_depth": 5})
    await call("search_files", {"pattern": "*"})
    await call("search_files", {"pattern": "*REDACTED*"})
    await call("search_project", {"query": WORD, "limit": 50})
    await call("search_project", {"query": "ghp"})
    found = await call("search", {"query": WORD})
    for hit in found.structured_content["results"]:
        await call("fetch", {"id": hit["id"]})
    await call("read_multiple_files", {"paths": list(shown)})
    for path in shown:
        await call("get_file_info", {"path": path, "sha256": True})
        await call("read_file_excerpt", {"path": path, "max_lines": 1})
    await call("read_file", {"path": "latest/notes.md"})
    await call("get_recent_changes", {})
    # Errors that echo a path, and the names spelled with their secret.
    await call("read_file", {"path": "snapshot-[REDACTED:github-token]/missing.md"})
    await call("read_file", {"path": f"snapshot-{tokens.github}/notes.md"})
    await call("list_directory", {"path": f"keys/dump_{tokens.slack}.txt"})
    await call("get_file_info", {"path": f"keys/creds_{tokens.aws}.md"})
    await call("get_audit_trail", {"limit": 200})
    return results


async def test_no_tool_result_names_a_secret_held_in_a_file_or_folder_name(
    tmp_path: Path,
) -> None:
    tokens = Tokens.fresh()
    root, home, shown = secret_workspace(tmp_path, tokens)
    with (tmp_path / "stderr").open("w+") as errlog, anyio.fail_after(120):
        async with connected(server_params([root], home), errlog) as client:
            results = await _calls(client, shown, tokens)
    for result in results:
        assert leaks(result_text(result), tokens) == [], result_text(result)[:400]


async def test_a_file_whose_name_holds_a_secret_is_read_by_the_path_it_was_shown_at(
    tmp_path: Path,
) -> None:
    tokens = Tokens.fresh()
    root, home, shown = secret_workspace(tmp_path, tokens)
    with (tmp_path / "stderr").open("w+") as errlog, anyio.fail_after(120):
        async with connected(server_params([root], home), errlog) as client:
            top_listing = await client.call_tool("list_directory", {"path": "."})
            top = listed(top_listing.structured_content)
            assert top["snapshot-[REDACTED:github-token]"]["type"] == "directory"
            tree = await client.call_tool("directory_tree", {"path": ".", "max_depth": 5})
            in_tree = listed(tree.structured_content)
            globbed = await client.call_tool("search_files", {"pattern": "*"})
            hits = await client.call_tool("search_project", {"query": WORD, "limit": 50})
            found = await client.call_tool("search", {"query": WORD})
            for path, text in shown.items():
                assert path in in_tree, path
                read = await client.call_tool("read_file", {"path": path})
                assert not read.is_error, (path, read.content)
                assert read.structured_content["text"] == text
            assert set(globbed.structured_content["matches"]) == set(shown)
            assert {h["path"] for h in hits.structured_content["hits"]} == set(shown)
            ids = [r["id"] for r in found.structured_content["results"]]
            assert set(ids) == set(shown)
            for id_ in ids:
                fetched = await client.call_tool("fetch", {"id": id_})
                assert fetched.structured_content["text"] == shown[id_]
            many = await client.call_tool("read_multiple_files", {"paths": list(shown)})
            assert not many.is_error
            via_link = await client.call_tool("read_file", {"path": "latest/notes.md"})
            assert via_link.structured_content["text"].startswith(WORD)


async def test_a_name_spelled_with_its_secret_is_refused_without_being_echoed(
    tmp_path: Path,
) -> None:
    tokens = Tokens.fresh()
    root, home, _shown = secret_workspace(tmp_path, tokens)
    spelled = [
        f"snapshot-{tokens.github}/notes.md",
        f"keys/creds_{tokens.aws}.md",
        f"tokens/{tokens.jwt}.json",
        f"tokens/report.{tokens.stripe}",
    ]
    with (tmp_path / "stderr").open("w+") as errlog, anyio.fail_after(120):
        async with connected(server_params([root], home), errlog) as client:
            for path in spelled:
                read = await client.call_tool("read_file", {"path": path})
                assert read.is_error and leaks(result_text(read), tokens) == []
                assert "[REDACTED:<kind>]" in result_text(read)
            many = await client.call_tool("read_multiple_files", {"paths": spelled})
            assert leaks(result_text(many), tokens) == []
            assert "quillfeather" not in result_text(many)


async def test_the_reads_journal_the_index_and_the_log_hold_no_secret_from_a_name(
    tmp_path: Path,
) -> None:
    tokens = Tokens.fresh()
    root, home, shown = secret_workspace(tmp_path, tokens)
    with (tmp_path / "stderr").open("w+") as errlog, anyio.fail_after(120):
        async with connected(server_params([root], home), errlog) as client:
            await _calls(client, shown, tokens)
            # The index is written by a background walk: the calls above may all be served
            # before it has stored the workspace's paths, whose absence then proves nothing.
            while not await _index_ready(client):
                await anyio.sleep(0.2)
    kept = [p for p in home.rglob("*") if p.is_file()]
    journals = [p for p in kept if p.name == "reads.jsonl"]
    indexes = [p for p in kept if ".sqlite" in p.name]  # the index and its shards
    assert journals and indexes
    # The paths are kept as written in both (so their absence below means something).
    assert any(b"keys/dump_[REDACTED:slack-token].txt" in p.read_bytes() for p in journals)
    assert any(b"keys/dump_[REDACTED:slack-token].txt" in p.read_bytes() for p in indexes)
    for file in [*kept, tmp_path / "stderr"]:  # the server's log too
        assert leaks(file.read_bytes(), tokens) == [], file.name


async def test_names_that_redact_alike_are_neither_read_for_the_other(tmp_path: Path) -> None:
    tokens = Tokens.fresh()
    root = tmp_path / "ws"
    (root / "pair").mkdir(parents=True)
    (root / "pair" / f"key-{tokens.github}.md").write_text("first twin\n")
    (root / "pair" / f"key-{tokens.github_other}.md").write_text("second twin\n")
    # A real name that spells the marker is shown escaped, never confused with a redaction.
    (root / "pair" / f"{tokens.github}.md").write_text("the secret name\n")
    (root / "pair" / "[REDACTED:github-token].md").write_text("the literal name\n")
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    with (tmp_path / "stderr").open("w+") as errlog, anyio.fail_after(120):
        async with connected(server_params([root], home), errlog) as client:
            listing = await client.call_tool("list_directory", {"path": "pair"})
            shown = result_text(listing)
            assert leaks(shown, tokens) == []
            assert "%5BREDACTED:github-token].md" in listing.structured_content["files"]
            # The twins are listed, but nothing about either (not even which is larger).
            twin_name = "key-[REDACTED:github-token].md"
            assert listing.structured_content["others"].count(twin_name) == 2
            assert twin_name not in listing.structured_content["files"]
            assert listing.structured_content["blocked"][twin_name] == "unreadable-type"
            twin = await client.call_tool(
                "read_file", {"path": "pair/key-[REDACTED:github-token].md"}
            )
            assert twin.is_error and "twin" not in result_text(twin)
            hits = await client.call_tool("search_project", {"query": "twin"})
            assert hits.structured_content["hits"] == []
            secret = await client.call_tool(
                "read_file", {"path": "pair/[REDACTED:github-token].md"}
            )
            assert secret.structured_content["text"] == "the secret name\n"
            literal = await client.call_tool(
                "read_file", {"path": "pair/%5BREDACTED:github-token].md"}
            )
            assert literal.structured_content["text"] == "the literal name\n"


async def test_names_that_only_look_random_are_shown_as_written(tmp_path: Path) -> None:
    tokens = Tokens.fresh()
    root, home, _shown = secret_workspace(tmp_path, tokens)
    with (tmp_path / "stderr").open("w+") as errlog, anyio.fail_after(120):
        async with connected(server_params([root], home), errlog) as client:
            globbed = await client.call_tool("search_files", {"pattern": "*.txt"})
            matches = globbed.structured_content["matches"]
            for legit in LEGIT:
                assert legit in matches
                read = await client.call_tool("read_file", {"path": legit})
                assert read.structured_content["text"] == f"{WORD} {legit}\n"
            objects = listed(
                (await client.call_tool("list_directory", {"path": "objects"})).structured_content
            )
            assert list(objects) == [SHA1]


async def test_no_search_confirms_a_guess_of_a_secret_held_in_a_name(tmp_path: Path) -> None:
    tokens = Tokens.fresh()
    root, home, _shown = secret_workspace(tmp_path, tokens)
    guesses = [tokens.github[4:20], tokens.aws, tokens.slack[-16:], tokens.jwt[:30]]
    with (tmp_path / "stderr").open("w+") as errlog, anyio.fail_after(120):
        async with connected(server_params([root], home), errlog) as client:
            for guess in guesses:
                globbed = await client.call_tool("search_files", {"pattern": f"*{guess}*"})
                assert globbed.structured_content["matches"] == []
                hits = await client.call_tool("search_project", {"query": guess})
                assert hits.structured_content["hits"] == []
                found = await client.call_tool("search", {"query": guess})
                assert found.structured_content["results"] == []


async def _index_ready(client: Client) -> bool:
    health = await client.call_tool("get_health", {})
    assert health.structured_content is not None
    return bool(health.structured_content["index_state"] == "ready")
