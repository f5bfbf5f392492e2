"""The adversarial run: the real server over stdio, attacked through every tool, leaks nothing.

One session against a hostile workspace makes hundreds of escape attempts (each a real MCP call)
and the legitimate uses a model needs; then the responses, the server's stderr, the reads
journal and the search index are searched for every canary, and the workspace tree is hashed
to prove the session changed nothing. The report separates attempts that hit an existing
target (so the policy, not a missing file, turned them down) from those that had no target.
"""

from __future__ import annotations

import collections
import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from safeport.context_server.policy.display_names import UndisplayableName, raw_name
from tests.context_server.hostile import (
    NFC_FOLDER,
    NFD_FOLDER,
    Hostile,
    build_hostile_workspace,
    connected,
    put_swapped,
    result_text,
    server_params,
    swapping,
    tree_digest,
)
from tests.context_server.listed import listed, names

pytestmark = pytest.mark.anyio

CRASH_PREFIX = "Error executing tool"
URL = "safeport://workspace/file/"


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Hostile:
    return build_hostile_workspace(tmp_path_factory.mktemp("hostile"))


def attack_paths(h: Hostile) -> list[str]:
    name = h.canaries["private-name"]
    return [
        ".env",
        ".env.production",
        ".ENV.local",
        ".Env",
        ".env.missing",
        "config/.npmrc",
        "config/.netrc",
        "config/.pgpass",
        "config/.pypirc",
        "config/.htpasswd",
        "config/.git-credentials",
        "config/../.env",
        "./.env",
        "src//../.env",
        "keys/id_rsa",
        "keys/id_ed25519",
        "keys/id_ecdsa_sk",
        "keys/ID_RSA.pub",
        "keys/id_dsa",
        "keys/server.pem",
        "keys/tls.key",
        "keys/deploy.ppk",
        "keys/vault.kdbx",
        "infra/terraform.tfstate",
        "infra/terraform.tfstate.backup",
        "db.sqlite3",
        "events.jsonl",
        ".aws/credentials",
        ".kube/config",
        ".docker/config.json",
        ".gnupg/secring.txt",
        ".ssh/id_ecdsa",
        ".ssh",
        "logs/app.txt",
        "media/photo.txt",
        "backup/dump.sql",
        "Data/customers.csv",
        "data",
        "DATA/customers.csv",
        f"data/{name}.txt",
        f"data/{name}/inner.py",
        f"{NFC_FOLDER}/notes.md",
        f"{NFD_FOLDER}/notes.md",
        f"{NFC_FOLDER.upper()}/notes.md",
        ".git/config",
        "node_modules/pkg/index.js",
        "link_abs_outside.txt",
        "link_rel_outside.txt",
        "link_parent",
        "link_parent/outside/outside-secret.txt",
        "link_parent/ws-secrets/secret.txt",
        "link_dangling.txt",
        "link_etc",
        "link_etc/passwd",
        "link_passwd.txt",
        "link_ssh",
        "link_ssh/id_ed25519",
        "link_ssh/config",
        "link_ssh_key.txt",
        "link_sibling.txt",
        "link_sibling_dir",
        "link_sibling_dir/secret.txt",
        "innocent.txt",
        "notes_link.md",
        "data_link",
        f"data_link/{name}.txt",
        "docs/up_link.md",
        "link_zero.txt",
        "loop_a",
        "loop_b/x",
        "hardlink.txt",
        "pipe.txt",
        "../outside/outside-secret.txt",
        "../ws-secrets/secret.txt",
        "src/../../ws-secrets/secret.txt",
        "/etc/passwd",
        str(h.root / ".env"),
        str(h.root / "src" / "app.py"),
        "~/.ssh/id_ed25519",
        "..\\outside\\outside-secret.txt",
        "C:\\Windows\\win.ini",
        "\\\\server\\share\\secret.txt",
        "file:///etc/passwd",
        "src/app.py\x00.env",
        ".env\n",
        # The second round: families, non-UTF-8 names, loops before `..`, long chains.
        *h.private_paths,
        ".envs",
        ".envs/.staging",
        "keys/id_rsa%ff",
        "src/.%65nv",
        ".env%20",
        "via_loop.txt",
        "via_loop_key.txt",
        "via_data.py",
        "chain/l0999",
        "chain/l0040",
    ]


def per_path_calls(path: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("read_file", {"path": path}),
        ("read_file_excerpt", {"path": path, "start_line": 1, "max_lines": 5}),
        ("get_file_info", {"path": path, "sha256": True}),
        ("list_directory", {"path": path}),
        ("directory_tree", {"path": path, "max_depth": 4}),
        ("read_multiple_files", {"paths": [path]}),
        ("fetch", {"id": path}),
        ("fetch", {"id": URL + path}),
        ("search_files", {"pattern": "*", "path": path}),
        ("search_project", {"query": "secret", "path": path}),
    ]


def global_calls(h: Hostile) -> list[tuple[str, dict[str, Any]]]:
    """Calls that succeed but must not reveal anything private in what they return."""
    calls: list[tuple[str, dict[str, Any]]] = [
        ("list_roots", {}),
        ("get_health", {}),
        ("list_directory", {"path": "."}),
        ("list_directory", {"path": "src"}),
        ("list_directory", {"path": "config"}),
        ("directory_tree", {"path": ".", "max_depth": 10, "max_entries": 5000}),
        ("get_recent_changes", {"limit": 500}),
        ("get_audit_trail", {"limit": 1000}),
        ("get_audit_trail", {"limit": 1000, "only_denied": True}),
    ]
    for query in (
        "CANARY",
        "canary",
        "secret material",
        "BEGIN OPENSSH",
        "root:x",
        "remote",
        "module.exports",
        "innocent words",
        "CA",
        "se",
        "x",
    ):
        calls.append(("search_project", {"query": query, "limit": 200}))
        calls.append(("search", {"query": query}))
    for pattern in ("*", "*.pem", "id_*", ".env*", "*credentials*", "**/*", "*/*.py", "*.txt"):
        calls.append(("search_files", {"pattern": pattern, "limit": 1000}))
    return calls


def exists_on_disk(root: Path, path: str) -> bool:
    """Whether the display path names an entry (escaped names are turned back into bytes)."""
    if "\x00" in path:
        return False
    try:
        raw = [raw_name(part) for part in path.split("/") if part not in ("", ".")]
    except UndisplayableName:
        return os.path.lexists(os.path.join(root, path))
    return os.path.lexists(os.path.join(os.fsencode(root), *raw))


def reason_of(text: str) -> str:
    for key in (
        "private",
        "outside the served workspace",
        "ignored",
        "binary",
        "not a readable",
        "not found",
        "changed",
        "more than 40 symbolic links",
        "invalid",
        "folder, not a file",
        "file, not a folder",
    ):
        if key in text:
            return key
    return "other"


async def test_two_hundred_attacks_leak_nothing_and_legitimate_uses_work(
    hostile: Hostile, tmp_path: Path
) -> None:
    h = hostile
    before = tree_digest(h.root)
    errlog = (tmp_path / "server.stderr").open("w+")
    attempts: list[dict[str, Any]] = []
    leaks: list[str] = []
    foreign = await another_workspace_reads(h, tmp_path)
    with anyio.fail_after(240):
        async with connected(server_params([h.root], h.home), errlog) as client:

            async def call(tool: str, args: dict[str, Any]) -> Any:
                with anyio.fail_after(20):
                    result = await client.call_tool(tool, args)
                text = result_text(result)
                found = h.found_canaries(text) + [f for f in foreign if f in text]
                if found:
                    leaks.append(f"{tool} {args!r}: {found}")
                if tool in ("search_files", "search_project", "search", "get_recent_changes"):
                    named = [p for p in h.private_paths if json.dumps(p) in text]
                    if named:
                        leaks.append(f"{tool} {args!r} names private files: {named}")
                assert text.strip() != f"{CRASH_PREFIX} {tool}", f"crash in {tool} {args!r}"
                return result

            # The attacks, through every tool, against every path.
            for path in attack_paths(h):
                exists = exists_on_disk(h.root, path)
                for tool, args in per_path_calls(path):
                    result = await call(tool, args)
                    text = result_text(result)
                    if tool == "read_multiple_files" and not result.is_error:
                        items = result.structured_content["files"]
                        assert not any(item["ok"] for item in items), path
                        text = items[0]["error"]
                    else:
                        assert result.is_error, f"{tool} served {path!r}"
                    attempts.append(
                        {"tool": tool, "path": path, "exists": exists, "reason": reason_of(text)}
                    )
            # Broad calls that succeed; they must not reveal private content or names.
            for tool, args in global_calls(h):
                result = await call(tool, args)
                assert not result.is_error, (tool, args, result_text(result))
                attempts.append({"tool": tool, "path": None, "exists": None, "reason": "served"})
            resources = await client.list_resources()
            for resource in resources.resources:
                read = await client.read_resource(str(resource.uri))
                body = "".join(getattr(c, "text", "") for c in read.contents)
                leaks.extend(f"resource {resource.uri}: {x}" for x in h.found_canaries(body))

            legit = await legitimate_uses(client, h)
    errlog.flush()
    errlog.seek(0)
    stderr = errlog.read()
    errlog.close()

    # Nothing leaked anywhere: responses, the server's log, the journal, the index.
    assert leaks == []
    assert h.found_canaries(stderr) == []
    journal = (h.home / "audit" / "reads.jsonl").read_text(encoding="utf-8")
    assert h.found_canaries(journal) == []
    assert '"<private>"' in journal
    for db in (h.home / "cache").rglob("*.sqlite*"):
        raw = db.read_bytes().decode("utf-8", "replace")
        assert h.found_canaries(raw) == [], db.name
    # The session created, changed and deleted nothing in the workspace.
    assert tree_digest(h.root) == before

    # The report: attempts on an existing target were turned down by the policy itself.
    per_path = [a for a in attempts if a["path"] is not None]
    existing = [a for a in per_path if a["exists"]]
    missing = [a for a in per_path if not a["exists"]]
    report = {
        "attempts": len(attempts),
        "per_path_attempts": len(per_path),
        "broad_calls_checked_for_leaks": len(attempts) - len(per_path),
        "hit_existing_target": dict(collections.Counter(a["reason"] for a in existing)),
        "no_target": dict(collections.Counter(a["reason"] for a in missing)),
        "legitimate_uses": legit,
        "canaries_found": 0,
    }
    (tmp_path / "adversarial-report.json").write_text(json.dumps(report, indent=2))
    print("\nadversarial report:", json.dumps(report, indent=2))
    assert len(attempts) >= 200
    assert legit >= 20
    assert len(existing) >= 100
    # An existing target is never answered "not found" by a read: the policy was consulted.
    reads = [a for a in existing if a["tool"] in ("read_file", "fetch", "read_file_excerpt")]
    assert not [a for a in reads if a["reason"] == "not found"], reads


async def another_workspace_reads(h: Hostile, tmp_path: Path) -> list[str]:
    """Another server, serving another root with the same home, reads and searches there.
    Its paths and queries are canaries for this workspace's audit trail."""
    other = h.base / "other-ws"
    name, query = f"CANARY{os.urandom(4).hex()}OTHERNAME", f"CANARY{os.urandom(4).hex()}QUERY"
    (other / "src").mkdir(parents=True)
    (other / "src" / f"{name}.py").write_text("x = 1\n")
    with (tmp_path / "other.stderr").open("w+") as errlog, anyio.fail_after(60):
        async with connected(server_params([other], h.home), errlog) as client:
            await client.call_tool("read_file", {"path": f"src/{name}.py"})
            await client.call_tool("search_project", {"query": query})
            await client.call_tool("read_file", {"path": f"src/{name}-missing.py"})
    return [name, query]


async def legitimate_uses(client: Any, h: Hostile) -> int:
    """The uses a model needs, each checked for its content. Returns how many succeeded."""
    ok = 0

    async def tool(name: str, args: dict[str, Any]) -> dict[str, Any]:
        nonlocal ok
        with anyio.fail_after(20):
            result = await client.call_tool(name, args)
        assert not result.is_error, (name, args, result_text(result))
        assert h.found_canaries(result_text(result)) == []
        ok += 1
        return dict(result.structured_content)

    roots = await tool("list_roots", {})
    assert [r["name"] for r in roots["roots"]] == ["ws"]
    assert str(h.root) not in json.dumps(roots)  # names, not absolute paths
    listing = await tool("list_directory", {"path": "."})
    by_name = listed(listing)
    assert by_name["README.md"]["blocked"] == ""
    assert by_name[".env"]["blocked"] == "private"
    assert by_name["data"]["blocked"] == "private"
    assert by_name["node_modules"]["blocked"] == "ignored"
    assert by_name["link_abs_outside.txt"]["blocked"] == "out-of-scope"
    assert by_name["innocent.txt"]["blocked"] == "private"
    assert by_name["hardlink.txt"]["blocked"] == "unreadable-type"
    assert by_name["hardlink.txt"]["size"] == 0  # another file's size is never shown
    assert by_name["pipe.txt"]["blocked"] == "unreadable-type"
    assert by_name["good_link.py"]["blocked"] == ""
    # A link's kind shows only where its target is allowed.
    assert by_name["good_link.py"]["type"] == "symlink"
    assert {by_name[n]["type"] for n in ("link_abs_outside.txt", "innocent.txt", "loop_a")} == {
        "other"
    }
    assert h.canaries["private-name"] not in json.dumps(listing)
    page = await tool("list_directory", {"path": ".", "limit": 5})
    assert len(names(page)) == 5 and page["next_cursor"]
    page2 = await tool("list_directory", {"path": ".", "limit": 5, "cursor": page["next_cursor"]})
    assert names(page2)[0] == names(listing)[5]
    assert by_name[".env~"]["blocked"] == "private" and by_name[".envs"]["blocked"] == "private"
    assert by_name[".env%E9"]["blocked"] == "private"
    assert by_name["via_loop.txt"]["blocked"] == "unreadable-type"
    assert by_name["via_data.py"]["blocked"] == "private"  # walks through a private folder
    assert by_name["via_abs_root.py"]["blocked"] == ""
    deploy = await tool("list_directory", {"path": "deploy"})
    in_deploy = listed(deploy)
    assert in_deploy["README.md"]["blocked"] == ""
    assert {e["blocked"] for n, e in in_deploy.items() if n != "README.md"} == {"private"}
    assert all(e["size"] == 0 for e in in_deploy.values() if e["blocked"] == "private")
    latin = await tool("read_file", {"path": "src/caf%E9.py"})
    assert "quokka" in latin["text"]
    src = await tool("list_directory", {"path": "src"})
    assert "caf%E9.py" in src["files"]
    quokka = await tool("search_project", {"query": "quokka"})
    assert [x["path"] for x in quokka["hits"]] == ["src/caf%E9.py"]
    absolute = await tool("read_file", {"path": "via_abs_root.py"})
    assert 'return "world"' in absolute["text"]
    chain = await tool("read_file", {"path": "chain/l0039"})  # 40 links: still followed
    assert 'return "world"' in chain["text"]
    tree = await tool("directory_tree", {"path": ".", "max_depth": 2, "max_entries": 5000})
    assert "src/app.py" in tree["files"] and "src/app.py" not in tree["blocked"]
    for path in ("src/app.py", "src/tokenizer.py", "src/keyboard.py", "src/id_utils.py"):
        content = await tool("read_file", {"path": path})
        assert content["truncated"] is False and content["text"]
    await tool("read_file", {"path": "src/secrets_scanner.py"})
    await tool("read_file", {"path": "Makefile"})
    await tool("read_file", {"path": "config.toml.example"})
    linked = await tool("read_file", {"path": "good_link.py"})
    assert 'return "world"' in linked["text"]
    big = await tool("read_file", {"path": "big.txt"})
    assert big["truncated"] is True and big["total_bytes"] >= 50 * 1024 * 1024
    assert big["next_line"] and big["served_bytes"] <= 128 * 1024
    more = await tool("read_file_excerpt", {"path": "big.txt", "start_line": big["next_line"]})
    assert more["lines"] and more["next_line"]
    long = await tool("read_file_excerpt", {"path": "src/long_line.txt", "max_lines": 3})
    assert long["next_line"] == 1 and long["next_column"] == 2001
    rest = await tool(
        "read_file_excerpt",
        {"path": "src/long_line.txt", "start_line": 1, "start_column": 9001, "max_lines": 3},
    )
    assert rest["lines"] == ["x" * 1000, "second line"] and rest["end_of_file"] is True
    multi = await tool("read_multiple_files", {"paths": ["README.md", ".env", "docs/guide.md"]})
    assert [f["ok"] for f in multi["files"]] == [True, False, True]
    assert multi["files"][1]["path"] == "<private>"
    info = await tool("get_file_info", {"path": "src/app.py", "sha256": True})
    import hashlib

    assert info["sha256"] == hashlib.sha256((h.root / "src/app.py").read_bytes()).hexdigest()
    await tool("get_file_info", {"path": "src"})
    found = await tool("search_files", {"pattern": "*.py"})
    assert "src/app.py" in found["matches"] and "good_link.py" not in found["matches"]
    hits = await tool("search_project", {"query": "def hello"})
    assert hits["hits"][0]["path"] == "src/app.py" and hits["hits"][0]["line"] == 1
    short = await tool("search_project", {"query": "xy"})
    assert short["method"] == "scan" and any(x["path"] == "docs/guide.md" for x in short["hits"])
    research = await tool("search", {"query": "xylophone"})
    assert research["results"][0]["url"] == URL + "docs/guide.md"
    doc = await tool("fetch", {"id": research["results"][0]["id"]})
    assert "xylophone" in doc["text"]
    doc2 = await tool("fetch", {"id": research["results"][0]["url"]})
    assert doc2["text"] == doc["text"]
    feed = await tool("get_recent_changes", {"limit": 10})
    assert feed["cursor"] and feed["reset"] is False
    follow = await tool("get_recent_changes", {"cursor": feed["cursor"]})
    assert follow["changes"] == [] and follow["reset"] is False
    # Shapes meant to exhaust the server get bounded answers, not a stall or a crash.
    far = await tool("read_file_excerpt", {"path": "big.txt", "start_column": 10**9})
    assert far["lines"][0] == "" and far["next_cursor"]  # past the end of line 1: empty
    deep = await tool("read_file_excerpt", {"path": "big.txt", "start_line": 10**9})
    assert deep["lines"] == [] and (deep["end_of_file"] or deep["next_cursor"])
    cursors: list[str] = []
    args: dict[str, Any] = {"query": "e", "limit": 1}
    for _ in range(5):  # a short query scans; every page moves the cursor on
        page = await tool("search_project", args)
        assert page["next_cursor"] not in cursors
        cursors.append(page["next_cursor"])
        args = {**args, "cursor": page["next_cursor"]}
    trail = await tool("get_audit_trail", {"limit": 5, "tool": "read_file"})
    assert trail["entries"] and all(e["tool"] == "read_file" for e in trail["entries"])
    health = await tool("get_health", {})
    assert health["journal_records_written"] > 0
    prompts = await client.list_prompts()
    assert {p.name for p in prompts.prompts} == {
        "explore_workspace",
        "investigate_file",
        "follow_changes",
    }
    got = await client.get_prompt("investigate_file", {"path": "src/app.py"})
    assert got.messages
    ok += 2
    return ok


SWAP_CALLS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("read_file", {"path": "swap.txt"}),
    ("read_file", {"path": "swapdir/f.txt"}),
    ("list_directory", {"path": "swapdir"}),
    ("search_files", {"pattern": "*", "path": "."}),
    ("directory_tree", {"path": ".", "max_depth": 3}),
    ("get_file_info", {"path": "swap.txt"}),
    ("get_file_info", {"path": "swapdir/f.txt"}),
)
# The calls that name the swapped link itself: served on its benign side, refused on its
# private side, whichever side it was renamed to last.
NAMES_THE_LINK = {0, 1, 2, 5, 6}


async def test_a_link_swapped_during_reads_never_serves_the_private_target(
    hostile: Hostile, tmp_path: Path
) -> None:
    """The links are renamed between calls, to each side in turn (each call's outcome is then
    known), and then by a thread while the calls run. The renames that land inside one call,
    between its check and its open, are made at that exact point by tests/context_server/
    test_workspace.py; the thread adds whatever interleavings the machine happens to give,
    and nothing here depends on which it gave."""
    h = hostile
    benign_sizes = {
        "swap.txt": (h.root / "src" / "app.py").stat().st_size,
        "swapdir/f.txt": (h.root / "swapdir" / "f.txt").stat().st_size,
    }

    async def call(client: Any, index: int) -> bool:
        """One call, checked for the private side; whether it was served."""
        tool, args = SWAP_CALLS[index]
        with anyio.fail_after(20):
            result = await client.call_tool(tool, args)
        text = result_text(result)
        if tool == "get_file_info" and not result.is_error:
            # Metadata only ever of the benign side, never of what the link pointed to.
            size = result.structured_content["size"]
            assert size == benign_sizes[str(args["path"])], (args, size)
        assert h.found_canaries(text) == [], (tool, text)
        assert h.canaries["private-name"] not in text
        return not result.is_error

    with (tmp_path / "stderr").open("w+") as errlog, anyio.fail_after(120):
        async with connected(server_params([h.root], h.home), errlog) as client:
            try:
                for benign in (True, False, True):
                    put_swapped(h.root, benign=benign)
                    for index in range(len(SWAP_CALLS)):
                        served = await call(client, index)
                        if index in NAMES_THE_LINK:
                            assert served is benign, (SWAP_CALLS[index], benign)
                        else:
                            assert served, SWAP_CALLS[index]
            finally:
                put_swapped(h.root, benign=True)
            with swapping(h.root):
                for _ in range(100):
                    for index in range(len(SWAP_CALLS)):
                        await call(client, index)
        errlog.seek(0)
        assert h.found_canaries(errlog.read()) == []
