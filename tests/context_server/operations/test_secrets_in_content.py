"""Secrets inside ordinary files never leave the context server: every read tool, excerpts cut
anywhere, the Deep Research pair, searches (index and scan) and the files the server keeps on
disk. The lines beside a secret, and code full of hashes, UUIDs and public keys, are served byte
for byte."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client

from benchmarks.secret_corpus.tokens import TOKENS
from safeport.context_server import Refused, ServeOptions, build_server
from safeport.context_server.operations.service import WorkspaceService
from safeport.context_server.tools.journaled_calls import JournaledServer
from tests.context_server.transport.test_direct import call, initialised

pytestmark = pytest.mark.anyio

# Built from pieces so no scanner flags this file itself.
TOKEN = "ghp" + "_" + "Q7x2Lm9Pz4Rt8Vw1Ky6Hn3Bc5Dj0Fg2Sa7Ex"
LATE_TOKEN = "ghp" + "_" + "Hb4Nc8Tq1Wz6Lm3Pv9Rx2Ks7Dy5Gf0Ja8UeM"
PG_PASSWORD = "Vq8zK2mP9wLx4Rt7"
PG_URL = f"postgres://app:{PG_PASSWORD}@db.internal:5432/app"
DOCKER_AUTH = base64.b64encode(b"deploy:Zr8Kq2Wm5Xv9Lp3T").decode()

SETTINGS = f'DEBUG = False\nGITHUB_TOKEN = "{TOKEN}"\nDATABASE_URL = "{PG_URL}"\nTIMEOUT = 30\n'
LEGIT = "\n".join(
    [
        "# Not secrets: read byte for byte.",
        "import os, uuid",
        'SHA256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"',
        'COMMIT = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"',
        'RUN_ID = uuid.UUID("123e4567-e89b-12d3-a456-426614174000")',
        'password = os.environ["DB_PASSWORD"]',
        'api_key = "<YOUR_API_KEY>"',
        'INTEGRITY = "sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvU'
        'dBeoGlODJ6+SfaPg=="',
        'HOST_KEY = "ssh-ed25519 '
        'AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl ops@host"',
        "",
    ]
)


def _key(tmp_path: Path) -> str:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ops", "-f", str(tmp_path / "k")],
        check=True,
    )
    key = (tmp_path / "k").read_text()
    (tmp_path / "k").unlink()
    return key


def _key_pieces(key: str) -> list[str]:
    """Every body line of the key: none of them may be served."""
    return [line for line in key.splitlines() if line and not line.startswith("-----")]


def _pieces(secret: str, size: int = 10) -> list[str]:
    return [secret[i : i + size] for i in range(0, len(secret) - size + 1)]


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, str]:
    home = tmp_path / "home"
    monkeypatch.setenv("SAFEPORT_HOME", str(home))
    root = tmp_path / "ws"
    (root / "app").mkdir(parents=True)
    (root / "docs").mkdir()
    key = _key(tmp_path)
    (root / "app" / "settings.py").write_text(SETTINGS)
    (root / "docs" / "ops.md").write_text(
        "# Operations\n\nThe deploy key:\n\n```\n" + key + "```\n\nRotate it yearly.\n"
    )
    registry = {"auths": {"registry.example.com": {"auth": DOCKER_AUTH}}, "proxy": "none"}
    (root / "registry.json").write_text(json.dumps(registry, indent=2) + "\n")
    (root / "app" / "legit.py").write_text(LEGIT)
    return root, home, key


def _server(root: Path) -> tuple[JournaledServer, WorkspaceService]:
    return build_server(ServeOptions(roots=[str(root)], origin="tests"))


async def _call(client: Client, name: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(name, args)
    assert not result.is_error, (name, args, result.content)
    assert isinstance(result.structured_content, dict)
    wire = json.dumps(result.structured_content) + "".join(
        getattr(c, "text", "") for c in result.content
    )
    return {"structured": result.structured_content, "wire": wire}


def _leaks(wire: str, key: str) -> list[str]:
    secrets = [TOKEN, PG_PASSWORD, DOCKER_AUTH, LATE_TOKEN, *_key_pieces(key)]
    # JSON escapes nothing in these (base64 and ASCII letters), so the text is what is searched.
    return [s for s in secrets if any(p in wire for p in _pieces(s))]


async def test_read_tools_withhold_each_secret_and_serve_the_lines_beside_byte_for_byte(
    served: tuple[Path, Path, str],
) -> None:
    root, _, key = served
    server, _ = _server(root)
    with anyio.fail_after(60):
        async with Client(server) as client:
            settings = await _call(client, "read_file", {"path": "app/settings.py"})
            text = settings["structured"]["text"]
            assert text.splitlines()[0] == "DEBUG = False" and text.endswith("TIMEOUT = 30\n")
            assert 'GITHUB_TOKEN = "[REDACTED:github-token]"' in text
            assert "postgres://app:[REDACTED:password-in-url]@db.internal" in text
            assert settings["structured"]["redacted"] == 2
            assert [(r["kind"], r["line"]) for r in settings["structured"]["redactions"]] == [
                ("github-token", 2),
                ("password-in-url", 3),
            ]
            ops = await _call(client, "read_file", {"path": "docs/ops.md"})
            lines = ops["structured"]["text"].split("\n")
            original = (root / "docs" / "ops.md").read_text().split("\n")
            assert len(lines) == len(original)  # the marker keeps every line
            changed = [i for i, (a, b) in enumerate(zip(lines, original, strict=True)) if a != b]
            assert changed == list(range(5, 5 + len(key.splitlines())))
            assert all(lines[i] == "[REDACTED:private-key]" for i in changed)
            registry = await _call(client, "read_file", {"path": "registry.json"})
            assert '"auth": "[REDACTED:docker-auth]"' in registry["structured"]["text"]
            assert '"proxy": "none"' in registry["structured"]["text"]
            paths = ["app/settings.py", "docs/ops.md", "registry.json", "app/legit.py"]
            many = await _call(client, "read_multiple_files", {"paths": paths})
            assert [f["content"]["redacted"] for f in many["structured"]["files"]] == [2, 1, 1, 0]
            fetched = [
                await _call(client, "fetch", {"id": path})
                for path in ("app/settings.py", "docs/ops.md", "registry.json")
            ]
            assert fetched[0]["structured"]["metadata"]["redacted_lines"] == [2, 3]
            legit = await _call(client, "read_file", {"path": "app/legit.py"})
            assert legit["structured"]["text"] == LEGIT and legit["structured"]["redacted"] == 0
            # A hash would confirm a guess of what was withheld: refused for such a file only.
            for path in ("app/settings.py", "docs/ops.md", "registry.json"):
                hashed = await client.call_tool("get_file_info", {"path": path, "sha256": True})
                assert hashed.is_error and "holds a secret" in str(hashed.content)
            info = await _call(client, "get_file_info", {"path": "app/legit.py", "sha256": True})
            assert info["structured"]["sha256"] == hashlib.sha256(LEGIT.encode()).hexdigest()
            changes = await _call(client, "get_recent_changes", {})
            assert changes["structured"]["changes"]  # paths and sizes, never content
            health = await _call(client, "get_health", {})
            assert health["structured"]["secrets_redacted"] == 2 * (2 + 1 + 1) + 4
            for answer in (settings, ops, registry, many, *fetched, legit, changes, health):
                assert _leaks(answer["wire"], key) == []


async def test_the_transport_direct_answers_are_redacted_as_the_sdk_answers(
    served: tuple[Path, Path, str],
) -> None:
    root, _, key = served
    server, _ = _server(root)
    direct = initialised(server)
    cases: list[tuple[str, dict[str, Any]]] = [
        ("read_file", {"path": "app/settings.py"}),
        ("read_file_excerpt", {"path": "app/settings.py", "start_line": 2, "start_column": 20}),
        ("read_file_excerpt", {"path": "docs/ops.md", "start_line": 7}),
    ]
    with anyio.fail_after(30):
        async with Client(server) as client:
            for number, (name, args) in enumerate(cases, 1):
                sdk = await _call(client, name, args)
                frame = await direct.answer(call(number, name, args))
                assert frame is not None
                ours = json.loads(frame)["result"]
                assert ours["structuredContent"] == sdk["structured"]
                assert ours["structuredContent"]["redacted"] >= 1
                assert _leaks(frame.decode(), key) == [] and _leaks(sdk["wire"], key) == []
    server.service.journal.close()


async def test_no_excerpt_shows_a_piece_of_a_secret_wherever_it_starts_or_is_cut(
    served: tuple[Path, Path, str],
) -> None:
    root, _, key = served
    # A secret across the 2,000-character split of a long line, and one after a non-UTF-8 byte.
    long_line = "x = 1; " * 284 + f'token = "{TOKEN}"; y = 2\n'
    (root / "long.py").write_text("first = 1\n" + long_line + "last = 3\n")
    latin1 = b"name = caf\xe9\nsecret_token = " + LATE_TOKEN.encode() + b"\n"
    (root / "latin1.cfg").write_bytes(latin1)
    server, _ = _server(root)
    served_lines: list[str] = []
    with anyio.fail_after(60):
        async with Client(server) as client:

            async def excerpt(path: str, **args: Any) -> dict[str, Any]:
                answer = await _call(client, "read_file_excerpt", {"path": path, **args})
                served_lines.append(answer["wire"])
                return dict(answer["structured"])

            at = SETTINGS.split("\n")[1].index("ghp") + 1
            for column in range(at, at + len(TOKEN), 3):  # starting inside the token
                piece = await excerpt("app/settings.py", start_line=2, start_column=column)
                assert piece["redactions"] and piece["redactions"][0]["line"] == 2
            first = await excerpt("long.py", start_line=2, max_lines=1)
            assert first["next_column"] == 2001 and first["lines"][0].startswith("x = 1; x")
            assert first["lines"][0].endswith("[REDACTED:github-token]")
            rest = await excerpt(
                "long.py",
                start_line=2,
                start_column=first["next_column"],
                cursor=first["next_cursor"],
            )
            assert rest["lines"][0].startswith("[REDACTED:github-token]")
            assert rest["lines"][1] == "last = 3"  # the line beside it, as written
            body = 5 + len(key.splitlines()) // 2  # inside the key block, its BEGIN above
            inside = await excerpt("docs/ops.md", start_line=body, max_lines=3)
            assert inside["lines"][0] == "[REDACTED:private-key]"
            tail = await excerpt("docs/ops.md", start_line=body, start_column=9, max_lines=30)
            assert (
                tail["lines"][-2:] == ["Rotate it yearly.", ""]
                or "Rotate it yearly." in (tail["lines"])
            )
            latin = await excerpt("latin1.cfg", start_line=1)
            assert latin["lines"] == ["name = caf\ufffd", "secret_token = [REDACTED:github-token]"]
            read = await _call(client, "read_file", {"path": "latin1.cfg"})
            assert read["structured"]["redacted"] == 1
            served_lines.append(read["wire"])
    assert all(_leaks(wire, key) == [] for wire in served_lines)


async def test_a_huge_line_cut_by_the_read_cap_withholds_the_torn_secret(
    served: tuple[Path, Path, str],
) -> None:
    root, _, key = served
    _, service = _server(root)
    cap = service.workspace.policy.max_read_bytes
    head = "a = 1, " * ((cap - 20) // 7)
    (root / "huge.txt").write_text(head + "b" * (cap - 20 - len(head)) + f" {TOKEN} " + "c" * cap)
    content = service.read_file("huge.txt")
    assert content.truncated and content.text.endswith("[REDACTED:github-token]")
    assert content.text.startswith(head) and _leaks(content.text, key) == []
    service.journal.close()


async def test_searches_never_confirm_a_piece_of_a_secret_by_index_or_by_scan(
    served: tuple[Path, Path, str],
) -> None:
    root, _, key = served
    _, service = _server(root)
    queries = [TOKEN[6:18], PG_PASSWORD[3:12], DOCKER_AUTH[4:16], _key_pieces(key)[1][10:30]]
    assert not service.index.ready
    # Before the index is built: the scan path (the first call starts a build behind it).
    assert service.search_project(queries[0], ".", 50, None).method == "scan"
    for query in queries:
        assert service.search_project(query, ".", 50, None).hits == []
    service.index.refresh()
    for query in queries:
        found = service.search_project(query, ".", 50, None)
        assert found.method == "index" and found.hits == []
        assert service.search(query).results == []
    marked = service.search_project("REDACTED:github", ".", 50, None).hits
    assert [(h.path, h.line) for h in marked] == [("app/settings.py", 2)]
    assert marked[0].snippet == 'GITHUB_TOKEN = "[REDACTED:github-token]"'
    # What is not a secret is found as before.
    assert [h.path for h in service.search_project("4b825dc642cb", ".", 50, None).hits] == [
        "app/legit.py"
    ]
    service.journal.close()


async def test_a_file_grown_past_the_index_limit_since_indexing_confirms_no_torn_secret(
    served: tuple[Path, Path, str],
) -> None:
    root, _, key = served
    _, service = _server(root)
    (root / "grown.txt").write_text("zzmarker here\n")
    service.index.refresh()
    # Grown since: the token sits across the first MiB, on the line the query finds.
    limit = 1024 * 1024
    filler = "x = 1\n" * ((limit - 100) // 6)
    line = "zzmarker " + " " * (limit - len(filler) - 9 - 12) + TOKEN + "\n"
    assert len(filler + line) > limit and (filler + line).index(TOKEN) < limit
    (root / "grown.txt").write_text(filler + line)
    found = service.search_project("zzmarker", ".", 50, None)
    assert found.method == "index"
    assert _leaks(json.dumps([h.model_dump() for h in found.hits]), key) == []
    assert all(TOKEN[:8] not in h.snippet for h in found.hits)
    service.journal.close()
    service.index.close()


async def test_the_files_kept_on_disk_hold_no_secret_even_for_a_file_edited_after_indexing(
    served: tuple[Path, Path, str],
) -> None:
    root, home, key = served
    server, service = _server(root)
    service.index.refresh()
    (root / "app" / "settings.py").write_text(SETTINGS + f'LATE = "{LATE_TOKEN}"\n')
    service.index.refresh()
    assert service.search_project(LATE_TOKEN[8:20], ".", 50, None).hits == []
    with anyio.fail_after(60):
        async with Client(server) as client:
            for path in ("app/settings.py", "docs/ops.md", "registry.json"):
                await _call(client, "read_file", {"path": path})
            await _call(client, "read_multiple_files", {"paths": ["app/settings.py"]})
    service.journal.close()
    service.index.close()
    kept = [p for p in home.rglob("*") if p.is_file()]
    assert any(p.suffix == ".sqlite" for p in kept) and any(p.name == "reads.jsonl" for p in kept)
    secrets = [TOKEN, LATE_TOKEN, PG_PASSWORD, DOCKER_AUTH, *_key_pieces(key)]
    for file in kept:
        data = file.read_bytes()
        for secret in secrets:
            assert not any(p.encode() in data for p in _pieces(secret)), (file.name, secret[:4])


# -- property: a generated token in random text never shows through any excerpt -------------

AROUND = st.text(st.characters(min_codepoint=32, max_codepoint=0x2FF), max_size=120)
SEPARATORS = st.sampled_from([" ", "\n", '"', "'", "=", ": ", "(", ",", "\t", "`"])


@pytest.fixture(scope="module")
def property_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WorkspaceService]:
    base = tmp_path_factory.mktemp("property")
    (base / "ws").mkdir()
    previous = os.environ.get("SAFEPORT_HOME")
    os.environ["SAFEPORT_HOME"] = str(base / "home")
    try:
        _, service = _server(base / "ws")
        yield service
        service.journal.close()
    finally:
        if previous is None:
            del os.environ["SAFEPORT_HOME"]
        else:
            os.environ["SAFEPORT_HOME"] = previous


@settings(max_examples=150, deadline=None)
@given(
    kind=st.sampled_from(sorted(TOKENS)),
    before=AROUND,
    left=SEPARATORS,
    right=SEPARATORS,
    after=AROUND,
    pad=st.integers(0, 2100),
    start_column=st.integers(1, 2300),
    max_lines=st.integers(1, 3),
)
def test_a_generated_token_in_random_text_never_shows_through_an_excerpt(
    property_service: WorkspaceService,
    kind: str,
    before: str,
    left: str,
    right: str,
    after: str,
    pad: int,
    start_column: int,
    max_lines: int,
) -> None:
    secret = TOKENS[kind]()
    text = "x" * pad + before + left + secret + right + after + "\n"
    root = Path(property_service.workspace.roots[0].path)
    (root / "random.txt").write_text(text)
    line = text[: text.index(secret)].count("\n") + 1
    served: list[str] = []
    excerpt = property_service.read_file_excerpt("random.txt", line, max_lines, start_column)
    served += excerpt.lines
    for _ in range(4):  # on through the splits of a long line
        if excerpt.next_line is None:
            break
        excerpt = property_service.read_file_excerpt(
            "random.txt",
            excerpt.next_line,
            max_lines,
            excerpt.next_column or 1,
            excerpt.next_cursor,
        )
        served += excerpt.lines
    served.append(property_service.read_file("random.txt").text)
    shown = "\n".join(served)
    # No ten characters of the value's random tail are served anywhere (a generated sample may
    # carry what is not secret before it: a connection string's account name, a URL's host).
    assert not any(p in shown for p in _pieces(secret[-24:])), (kind, start_column)


def test_a_secret_anywhere_in_a_large_file_is_seen_across_the_hashing_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SAFEPORT_HOME", str(tmp_path / "home"))
    root = tmp_path / "ws"
    root.mkdir()
    key = _key(tmp_path)
    filler = "value = 1\n" * ((1 << 20) // 10 - 3)
    (root / "key_across.md").write_text(filler + key + filler)
    (root / "token_far.txt").write_text(filler * 3 + f"x = {TOKEN}\n")
    (root / "clean.txt").write_text(filler * 2)
    _, service = _server(root)
    for path in ("key_across.md", "token_far.txt"):
        with pytest.raises(Refused, match="holds a secret"):
            service.get_file_info(path, sha256=True)
    assert service.get_file_info("clean.txt", sha256=True).sha256 == (
        hashlib.sha256((filler * 2).encode()).hexdigest()
    )
    service.journal.close()
