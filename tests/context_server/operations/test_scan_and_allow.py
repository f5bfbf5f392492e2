"""The person's side of secrets in content, through the real `sp` and the real server: the scan
reports kinds, lines and fingerprints and never a value; a value allowed back by fingerprint is
served as written by every read path and the index, and nothing else is; a root with redaction
turned off is said so by `sp status`, `sp doctor`, get_health, the reads journal and the server's
start."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from safeport.context_server import ServeOptions, build_server
from safeport.context_server.operations.secret_report import ScanReport
from safeport.shared.audit import read_records
from tests.context_server.operations.test_secrets_in_content import _key, _key_pieces, _pieces

pytestmark = pytest.mark.anyio

# Built from pieces so no scanner flags this file itself.
TOKEN = "ghp" + "_" + "Q7x2Lm9Pz4Rt8Vw1Ky6Hn3Bc5Dj0Fg2Sa7Ex"
FALSE_POSITIVE = "Xk9fQ2mLp7Wz4Rt8Vb3N"  # what the person says is no secret
NEIGHBOUR = "Hq5Tz8Wm2Kp9Lx3Rv7Jd"  # a real one, beside it
NEAR = FALSE_POSITIVE[:-1] + "Q"  # one character away from the allowed value
SETTINGS = (
    "DEBUG = False\n"
    f'GITHUB_TOKEN = "{TOKEN}"\n'
    f'fixture_secret = "{FALSE_POSITIVE}"\n'
    f'db_password = "{NEIGHBOUR}"\n'
    f'other_secret = "{NEAR}"\n'
    "TIMEOUT = 30\n"
)


def sp(home: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "safeport", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "SAFEPORT_HOME": str(home), "COLUMNS": "200"},
        cwd=cwd,
        timeout=120,
    )


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, str]:
    home = tmp_path / "home"
    monkeypatch.setenv("SAFEPORT_HOME", str(home))
    root = tmp_path / "ws"
    (root / "app").mkdir(parents=True)
    (root / "ledger").mkdir()
    key = _key(tmp_path)
    (root / "app" / "settings.py").write_text(SETTINGS)
    (root / "app" / "deploy.md").write_text("The key:\n\n" + key + "\nDone.\n")
    (root / "app" / "copy.py").write_text(f'api_secret = "{FALSE_POSITIVE}"\n')
    (root / ".env").write_text(f"TOKEN={TOKEN}\n")
    (root / "ledger" / "people.csv").write_text("name\n")
    (root / "prod-db.yaml").write_text("a: b\n")
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    (root / "nul.txt").write_bytes(b"a\x00b\n")
    with open(root / "huge.txt", "wb") as huge:  # sparse: over the size excerpts read
        huge.write(b"# notes\n" * 2000 + f'late_secret = "{NEIGHBOUR}"\n'.encode())
        huge.truncate(65 * 1024 * 1024)
    home.mkdir(mode=0o700)
    (home / "context.toml").write_text(
        '[private]\nfolders = ["ledger"]\npatterns = ["prod-*.yaml"]\n'
    )
    return root, home, key


def _secrets(key: str) -> list[str]:
    return [TOKEN, FALSE_POSITIVE, NEIGHBOUR, NEAR, *_key_pieces(key)]


def _leaks(text: str, key: str, secrets: list[str] | None = None) -> list[str]:
    return [s for s in (secrets or _secrets(key)) if any(p in text for p in _pieces(s, 8))]


def test_the_scan_reports_kinds_lines_and_refusals_and_never_a_piece_of_a_value(
    workspace: tuple[Path, Path, str],
) -> None:
    root, home, key = workspace
    shown = sp(home, "context", "scan", "--root", str(root))
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert _leaks(out + shown.stderr, key) == []
    assert "app/settings.py" in out and "app/deploy.md" in out
    assert "github-token" in out and "private-key" in out and "secret-assignment" in out
    assert ".env: private by name" in out
    assert "ledger: private: a [private] folder in context.toml" in out
    assert "prod-db.yaml: private: a [private] pattern in context.toml" in out
    assert "huge.txt: over the size excerpts read: only its head" in out
    assert "logo.png: not text" in out and "nul.txt: not text" in out
    # The key is made on first need, private, in safeport's folder and not in the workspace.
    made = home / "fingerprint.key"
    assert made.stat().st_mode & 0o777 == 0o600 and made.stat().st_size == 32
    assert not [p for p in root.rglob("*") if "fingerprint" in p.name]

    as_json = sp(home, "context", "scan", "--root", str(root), "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert _leaks(as_json.stdout, key) == []
    report = ScanReport.model_validate_json(as_json.stdout)  # one document, the typed shape
    assert report.roots[0].path == str(root.resolve()) and not report.roots[0].redaction_off
    by_path = {f.path: f for f in report.files}
    settings = by_path["app/settings.py"].findings
    assert [(f.kind, f.line) for f in settings] == [
        ("github-token", 2),
        ("secret-assignment", 3),
        ("secret-assignment", 4),
        ("secret-assignment", 5),
    ]
    # Only what may be allowed back has a fingerprint; a key block spans its lines.
    assert settings[0].fingerprint is None and all(f.fingerprint for f in settings[1:])
    assert len({f.fingerprint for f in settings[1:]}) == 3
    deploy = by_path["app/deploy.md"].findings
    assert deploy[0].kind == "private-key" and deploy[0].end_line > deploy[0].line
    assert deploy[0].fingerprint is None
    assert [(f.kind, f.line) for f in by_path["huge.txt"].findings] == [("secret-assignment", 2001)]
    assert report.secrets_found == report.secrets_withheld == 7
    reasons = {(r.path, r.reason) for r in report.refused}
    assert {(".env", "credential-name"), ("ledger", "private-folder")} <= reasons
    assert {("prod-db.yaml", "private-pattern"), ("huge.txt", "too-large")} <= reasons
    assert {("logo.png", "binary"), ("nul.txt", "binary")} <= reasons
    again = json.loads(sp(home, "context", "scan", "--root", str(root), "--json").stdout)
    assert again == json.loads(as_json.stdout)  # the key is made once, then read


def _fingerprint_at(home: Path, root: Path, path: str, line: int) -> str:
    report = ScanReport.model_validate_json(
        sp(home, "context", "scan", "--root", str(root), "--json").stdout
    )
    [found] = [
        f for file in report.files if file.path == path for f in file.findings if f.line == line
    ]
    assert found.fingerprint is not None
    return found.fingerprint


async def test_an_allowed_value_is_served_as_written_everywhere_and_nothing_else_is(
    workspace: tuple[Path, Path, str],
) -> None:
    root, home, key = workspace
    mark = _fingerprint_at(home, root, "app/settings.py", 3)
    added = sp(home, "context", "allow", mark, "--root", str(root))
    assert added.returncode == 0, added.stderr
    # Shown with every place the value is written, never the value.
    assert "ws/app/settings.py:3" in added.stdout and "ws/app/copy.py:1" in added.stdout
    assert _leaks(added.stdout + added.stderr, key) == []
    config = (home / "context.toml").read_text()
    assert mark in config and 'folders = ["ledger"]' in config and FALSE_POSITIVE not in config
    again = sp(home, "context", "allow", mark, "--root", str(root))
    assert again.returncode == 0 and "already allowed" in again.stdout

    server, service = build_server(ServeOptions(roots=[str(root)], origin="tests"))
    # NEAR shares all but one character with the allowed value: it is looked for whole.
    withheld = [TOKEN, NEIGHBOUR, *_key_pieces(key)]
    with anyio.fail_after(60):
        async with Client(server) as client:

            async def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
                result = await client.call_tool(name, args)
                assert not result.is_error, (name, result.content)
                assert isinstance(result.structured_content, dict)
                wire = json.dumps(result.structured_content)
                assert _leaks(wire, key, withheld) == [] and NEAR not in wire, name
                return result.structured_content

            read = await call("read_file", {"path": "app/settings.py"})
            assert f'fixture_secret = "{FALSE_POSITIVE}"' in read["text"]
            assert 'db_password = "[REDACTED:secret-assignment]"' in read["text"]
            assert 'other_secret = "[REDACTED:secret-assignment]"' in read["text"]
            assert [r["line"] for r in read["redactions"]] == [2, 4, 5]
            excerpt = await call(
                "read_file_excerpt", {"path": "app/settings.py", "start_line": 3, "max_lines": 3}
            )
            assert excerpt["lines"][0] == f'fixture_secret = "{FALSE_POSITIVE}"'
            assert NEIGHBOUR not in excerpt["lines"][1]
            fetched = await call("fetch", {"id": "app/copy.py"})
            assert FALSE_POSITIVE in fetched["text"]
            service.index.refresh()
            found = await call("search_project", {"query": FALSE_POSITIVE[4:14]})
            assert found["method"] == "index"
            assert sorted(h["path"] for h in found["hits"]) == ["app/copy.py", "app/settings.py"]
            # The answer echoes the query: its hits alone are looked at. NEAR's end is its own.
            for secret in (NEIGHBOUR[4:14], NEAR[-10:], TOKEN[4:14]):
                missed = await client.call_tool("search_project", {"query": secret})
                assert isinstance(missed.structured_content, dict)
                assert missed.structured_content["hits"] == [], secret
            # A hash of a file whose only secret is allowed back confirms nothing withheld.
            info = await call("get_file_info", {"path": "app/copy.py", "sha256": True})
            assert info["sha256"]
    service.journal.close()


def test_allow_refuses_what_may_not_come_back_and_what_is_not_there(
    workspace: tuple[Path, Path, str],
) -> None:
    root, home, key = workspace
    before = (home / "context.toml").read_text()
    key_line = sp(home, "context", "allow", "--file", str(root / "app/deploy.md"), "--line", "4",
                  "--root", str(root))  # fmt: skip
    assert key_line.returncode != 0
    assert "private-key" in key_line.stderr and "only generic assignments" in key_line.stderr
    token_line = sp(home, "context", "allow", "--file", str(root / "app/settings.py"),
                    "--line", "2", "--root", str(root))  # fmt: skip
    assert token_line.returncode != 0 and "github-token" in token_line.stderr
    nothing = sp(home, "context", "allow", "fp1:" + "0" * 64, "--root", str(root))
    assert nothing.returncode != 0 and "matches no secret" in nothing.stderr
    malformed = sp(home, "context", "allow", NEIGHBOUR, "--root", str(root))
    assert malformed.returncode != 0 and "not a fingerprint" in malformed.stderr
    assert NEIGHBOUR not in malformed.stderr + malformed.stdout
    blank = sp(home, "context", "allow", "--file", str(root / "app/settings.py"), "--line", "1",
               "--root", str(root))  # fmt: skip
    assert blank.returncode != 0 and "no secret is withheld on line 1" in blank.stderr
    private = sp(home, "context", "allow", "--file", str(root / ".env"), "--line", "1",
                 "--root", str(root))  # fmt: skip
    assert private.returncode != 0 and "not a file the context server serves" in private.stderr
    assert (home / "context.toml").read_text() == before
    by_line = sp(home, "context", "allow", "--file", str(root / "app/settings.py"), "--line", "4",
                 "--root", str(root))  # fmt: skip
    assert by_line.returncode == 0 and "ws/app/settings.py:4" in by_line.stdout
    assert _leaks(by_line.stdout + by_line.stderr, key) == []


def test_a_value_pasted_into_the_allow_list_is_a_config_error_that_does_not_repeat_it(
    workspace: tuple[Path, Path, str],
) -> None:
    root, home, _ = workspace
    (home / "context.toml").write_text(f'[secrets]\nallow = ["{NEIGHBOUR}"]\n')
    scanned = sp(home, "context", "scan", "--root", str(root))
    assert scanned.returncode != 0 and "is not a fingerprint" in scanned.stderr
    assert NEIGHBOUR not in scanned.stderr + scanned.stdout


async def test_a_root_with_redaction_off_is_said_everywhere(
    workspace: tuple[Path, Path, str], tmp_path: Path
) -> None:
    root, home, key = workspace
    other = tmp_path / "lib"
    other.mkdir()
    (other / "conf.py").write_text(f'GITHUB_TOKEN = "{TOKEN}"\n')
    (home / "context.toml").write_text(f'[secrets]\nredaction_off = ["{root}"]\n')

    status = sp(home, "status", cwd=tmp_path)
    assert f"secrets   WARNING secret redaction {root.resolve()}: OFF" in status.stdout
    doctor = sp(home, "doctor", "--offline", cwd=tmp_path)
    assert f"warn  secret redaction {root.resolve()}: OFF" in doctor.stdout
    scanned = sp(home, "context", "scan", "--root", str(root))
    assert "WARNING: redaction is OFF" in scanned.stdout and "served as written" in scanned.stdout
    assert _leaks(scanned.stdout, key) == []

    started = subprocess.run(
        [sys.executable, "-m", "safeport", "context", "serve", "--root", str(root)],
        input="",
        capture_output=True,
        text=True,
        env={**os.environ, "SAFEPORT_HOME": str(home), "COLUMNS": "500"},
        timeout=60,
    )
    assert "secret redaction is OFF for the root" in started.stderr
    assert str(root.resolve()) in started.stderr

    server, service = build_server(ServeOptions(roots=[str(root), str(other)], origin="tests"))
    with anyio.fail_after(60):
        async with Client(server) as client:
            served = await client.call_tool("read_file", {"path": "ws/app/settings.py"})
            assert isinstance(served.structured_content, dict)
            assert TOKEN in served.structured_content["text"]
            kept = await client.call_tool("read_file", {"path": "lib/conf.py"})
            assert isinstance(kept.structured_content, dict)
            assert TOKEN not in kept.structured_content["text"]
            health = await client.call_tool("get_health", {})
            assert isinstance(health.structured_content, dict)
            assert health.structured_content["redaction_off"] == ["ws"]
    service.index.refresh()
    service.journal.close()
    records = [r["body"] for r in read_records(home / "audit" / "reads.jsonl")]
    reads = {r["args"].get("path"): r for r in records if r["tool"] == "read_file"}
    assert reads["ws/app/settings.py"]["unredacted_roots"] == [str(root.resolve())]
    assert "unredacted_roots" not in reads["lib/conf.py"]

    # Turned back on: the index built while it was off (holding the token) is removed.
    held_open = {p.name for p in (home / "cache" / "context").iterdir()}
    # The index built while it was off holds the token as written: a query for it finds it.
    assert [c.rel for c in service.index.candidates(TOKEN, "ws", "", None)] == ["app/settings.py"]
    (home / "context.toml").write_text("")
    _, again = build_server(ServeOptions(roots=[str(root), str(other)], origin="tests"))
    again.index.refresh()
    again.journal.close()
    now = {p.name for p in (home / "cache" / "context").iterdir()}
    assert now and not now & {name for name in held_open if "-off-" in name}
    assert not any(TOKEN.encode() in p.read_bytes() for p in (home / "cache" / "context").iterdir())
    assert again.search_project(TOKEN[4:14], ".", 50, None).hits == []


# File names are the workspace's (an agent that writes files chooses them): a C1 CSI (which a
# terminal obeys like ESC [), NEL, a bidi override and ESC itself.
HOSTILE_NAMES = ("x\x9b31mred.py", "y\x85z.py", "cfg\u202eyp.py", "e\x1b[2J.py")


def test_the_scans_json_and_text_print_a_hostile_file_name_as_ascii(
    workspace: tuple[Path, Path, str],
) -> None:
    root, home, _ = workspace
    for name in HOSTILE_NAMES:
        (root / "app" / name).write_text(f'GITHUB_TOKEN = "{TOKEN}"\n')
    as_json = sp(home, "context", "scan", "--root", str(root), "--json")
    assert as_json.returncode == 0, as_json.stderr
    # Printable ASCII and line breaks only: nothing a terminal acts on or reorders.
    assert all(char == "\n" or " " <= char <= "~" for char in as_json.stdout)
    # Each is reported, as its percent-encoded (ASCII) form.
    paths = {f.path for f in ScanReport.model_validate_json(as_json.stdout).files}
    assert len([p for p in paths if p.startswith("app/") and "%" in p]) == len(HOSTILE_NAMES)
    shown = sp(home, "context", "scan", "--root", str(root)).stdout
    assert all(char == "\n" or char.isprintable() for char in shown)
