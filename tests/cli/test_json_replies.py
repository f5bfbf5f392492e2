"""Every command that reports has `--json`, and what it prints has the keys the CLI reference
documents: each command runs for real (a real vault, a real gateway) and its JSON is parsed and
its keys compared with the reference's table."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from harness.gateway import REPO
from tests.cli.running_gateway import running_gateway
from tests.cli.test_real_vault_e2e import PASSPHRASE, home, sp

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.cli"

__all__ = ["home"]

REFERENCE = REPO / "docs" / "reference" / "cli.md"
_ROW = re.compile(r"^\| `(sp [a-z ]+)(?: --[a-z]+)* --json` \| (.+) \|$", re.MULTILINE)


def documented() -> dict[str, tuple[bool, set[str], set[str]]]:
    """Command → (a list?, its top-level or item keys, its entries' keys where given)."""
    table: dict[str, tuple[bool, set[str], set[str]]] = {}
    for command, cell in _ROW.findall(REFERENCE.read_text()):
        head, _, entries = cell.partition("each entry:")
        keys = set(re.findall(r"`(\w+)`", head.split("(and")[0]))
        table[command] = (cell.startswith("a list"), keys, set(re.findall(r"`(\w+)`", entries)))
    return table


def check(command: str, answer: Any) -> None:
    listed, keys, entry_keys = documented()[command]
    if listed:
        assert isinstance(answer, list), (command, answer)
        items = answer
    else:
        assert isinstance(answer, dict) and set(answer) == keys, (command, sorted(answer))
        items = []
    for item in items:
        if keys:
            assert set(item) == keys, (command, sorted(item))
    if entry_keys:
        for entry in answer["entries"]:
            assert set(entry) == entry_keys, (command, sorted(entry))


def run_json(home: Path, *args: str) -> tuple[int, Any]:
    done = sp(home, *args, "--json")
    return done.returncode, json.loads(done.stdout)


def test_every_reporting_command_prints_its_documented_json(home: Path, tmp_path: Path) -> None:
    pw = str(home / "pw")
    seen: set[str] = set()

    def ok(command: str, *extra: str, code: int = 0) -> Any:
        returned, answer = run_json(home, *command.split()[1:], *extra)
        assert returned == code, (command, answer)
        check(command, answer)
        seen.add(command)
        return answer

    fresh = tmp_path / "fresh"
    fresh.mkdir(mode=0o700)
    (fresh / "pw").write_text(PASSPHRASE + "\n")
    done = sp(fresh, "init", "--passphrase-file", str(fresh / "pw"), "--json")
    assert done.returncode == 0, done.stderr
    init = json.loads(done.stdout)  # the words went to stderr: stdout is the JSON alone
    check("sp init", init)
    seen.add("sp init")
    assert init["vault_created"] and len(init["written"]) == 2 and "wrote" in done.stderr

    assert ok("sp vault status", code=2)["unlocked"] is False
    assert ok("sp vault unlock", "--passphrase-file", pw, code=2)["state"] == "locked"
    assert ok("sp status", code=2)["state"] == "down"
    assert ok("sp vault list", "--passphrase-file", pw)[0]["name"] == "build-key"
    ok("sp policy check")
    ok("sp client list")
    checked = ok(
        "sp client install", "codex", "--check", "--root", str(tmp_path), code=1
    )  # nothing installed yet
    assert checked["ok"] is False and checked["problems"]
    # --json reports a check; an install that changes a file is not run by a --json typo.
    refused = sp(home, "client", "install", "codex", "--root", str(tmp_path), "--json")
    assert refused.returncode == 2 and not (home / ".codex").exists(), refused.stderr
    assert ok("sp vault lock") == {"locked": True, "held_by_gateway": False}
    ok("sp context scan", "--root", str(tmp_path))
    with running_gateway(home):
        assert ok("sp vault unlock", "--passphrase-file", pw)["state"] == "unlocked"
        accepted = ok("sp policy accept", "--yes", "--passphrase-file", pw)
        assert accepted["accepted"] and accepted["changed"]
        assert ok("sp policy accept", "--yes", "--passphrase-file", pw)["changed"] is False
        assert ok("sp vault status")["unlocked"] is True
        assert ok("sp doctor", "--offline")["state"] == "ok"
        assert ok("sp status")["state"] == "ok"
        ok("sp gateway status")
        assert ok("sp gateway reload")["pending"] is False
        ok("sp sessions list")
        ok("sp approvals list")
        ok("sp approver list")
        ok("sp context clients list")
        assert ok("sp vault lock", "--passphrase-file", pw)["held_by_gateway"] is True
        stopped = ok("sp gateway stop")
        assert stopped["was_running"] and stopped["stopped"] and stopped["pid"] > 0
    assert ok("sp gateway stop") == {"was_running": False, "stopped": True, "pid": None}
    assert {j["journal"] for j in ok("sp audit verify")} >= {"sessions"}
    # `sp context call --json` is run in test_context_call.py, against a workspace of its own.
    assert seen | {"sp context call"} == set(documented())
