"""`sp status` shows the whole installation on one screen (and as JSON); `sp doctor` names
each problem with its fix and exits 1 when something is wrong."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tests.cli.running_gateway import running_gateway
from tests.cli.test_real_vault_e2e import home, sp
from tests.context_server.mcp_clients.test_client_install import sp as client_sp

__all__ = ["home"]


def test_status_on_an_empty_home_says_what_is_missing(tmp_path: Path) -> None:
    empty = tmp_path / "e"
    empty.mkdir(mode=0o700)
    done = sp(empty, "status")
    assert done.returncode == 2, done.stderr  # down: nothing runs yet
    assert "gateway   not running — start it with `sp gateway run`" in done.stdout
    assert f"vault     none yet at {empty / 'vault.sp'} — create it with `sp vault init`" in (
        done.stdout
    )
    answer = json.loads(sp(empty, "status", "--json").stdout)
    assert answer["gateway"]["running"] is False and answer["vault"]["exists"] is False


def test_status_with_a_running_gateway_shows_every_part(home: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    installed = client_sp(home, "cursor", "--root", str(workspace), SAFEPORT_HOME=str(home))
    assert installed.returncode == 0, installed.stderr
    with running_gateway(home):
        pw = str(home / "pw")
        assert sp(home, "policy", "accept", "--passphrase-file", pw, "--yes").returncode == 0
        done = sp(home, "status", "--json")
        assert done.returncode == 0, done.stderr
        answer = json.loads(done.stdout)
        assert answer["gateway"]["running"] and answer["gateway"]["vault"] == "unlocked"
        assert answer["gateway"]["pending_cards"] == 0 and answer["gateway"]["sessions"] == 0
        assert answer["vault"]["entries"] == 1
        assert answer["policy"]["served"] == answer["policy"]["file_digest"]
        assert not answer["policy"]["pending"]
        journals = {j["journal"]: j for j in answer["journals"]}
        assert journals["sessions"]["ok"] and journals["sessions"]["records"] > 0
        text = sp(home, "status").stdout
        assert "gateway   running (pid" in text and "vault unlocked" in text
        assert "journal   sessions" in text and "chain: valid" in text
        (home / "gateway.toml").write_text((home / "gateway.toml").read_text() + "\n# edit\n")
        assert "waiting for `sp policy accept`" in sp(home, "status").stdout


def test_doctor_names_each_problem_with_its_fix_and_exits_1(home: Path) -> None:
    os.chmod(home, 0o755)
    done = sp(home, "doctor", "--offline")
    assert done.returncode == 1, done.stdout
    assert f"FAIL  folder {home}: has mode 0755, not 0700" in done.stdout
    assert f"fix: chmod 700 {home}" in done.stdout
    os.chmod(home, 0o700)
    fixed = sp(home, "doctor", "--offline")
    assert fixed.returncode == 2, fixed.stdout  # no problem; the gateway is down
    assert "no problems found" in fixed.stdout and "warn  gateway" in fixed.stdout


def test_doctor_reaches_declared_hosts_and_reports_an_unreachable_one(home: Path) -> None:
    done = sp(home, "doctor")
    assert done.returncode == 1
    assert "FAIL  ssh host nowhere: 127.0.0.1:1 unreachable" in done.stdout
    assert "fix: check the address and port" in done.stdout


def test_doctor_flags_a_client_entry_that_lost_its_home(home: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "w"
    workspace.mkdir()
    assert client_sp(home, "cursor", "--root", str(workspace)).returncode == 0  # no SAFEPORT_HOME
    done = sp(home, "doctor", "--offline")
    assert done.returncode == 1, done.stdout
    assert "FAIL  client cursor: SAFEPORT_HOME: not set in the entry" in done.stdout
    assert "fix: sp client install cursor --replace" in done.stdout


def test_doctor_checks_an_https_service_with_the_identity_the_gateway_would_require(
    tmp_path: Path,
) -> None:
    from safeport.demo.tls_service import serve_demo_api

    home = tmp_path / "d"
    home.mkdir(mode=0o700)
    with serve_demo_api(tmp_path, b"token") as service:
        policy = (
            '[credentials.api-token]\nkind = "token"\n\n[http.services.api]\n'
            f'base_url = "{service.base_url}"\ncredential = "api-token"\n'
        )
        (home / "gateway.toml").write_text(policy + f'ca_file = "{service.ca_file}"\n')
        trusted = sp(home, "doctor")
        assert "ok    https service api: localhost" in trusted.stdout, trusted.stdout
        (home / "gateway.toml").write_text(policy)  # the system roots do not know the test CA
        refused = sp(home, "doctor")
        assert refused.returncode == 1
        assert "FAIL  https service api:" in refused.stdout
        assert "certificate refused" in refused.stdout
        assert "fix: paste a private CA into ca_pem" in refused.stdout


def test_status_says_when_the_journals_disk_runs_low_and_is_quiet_when_it_does_not() -> None:
    from safeport.cli.health.status_text import overview_lines
    from safeport.gateway_client.status_overview import Overview

    def lines(space: dict[str, object]) -> str:
        gateway = {"running": True, "pid": 1, "uptime_s": 5, "vault": "unlocked",
                   "sessions": 0, "pending_cards": 0, "journal_space": space}  # fmt: skip
        policy: dict[str, Any] = {"file": "g.toml", "file_digest": None, "file_error": None,
                                  "served": None, "pending": False, "problems": []}  # fmt: skip
        home = {"config": "/c", "data": "/d", "vault": "/d/vault.sp", "audit": "/a", "run": "/r",
                "SAFEPORT_HOME": ""}  # fmt: skip
        view = Overview(home=home, gateway=gateway, vault={"exists": False}, policy=policy)
        return "\n".join(overview_lines(view))

    low = lines({"free_bytes": 3 * 1024**2, "reserve_bytes": 64 * 1024**2, "low": True})
    assert "3.0 MiB free" in low and "proposals are refused until space is freed" in low
    room: dict[str, object] = {
        "free_bytes": 10 * 1024**3,
        "reserve_bytes": 64 * 1024**2,
        "low": False,
    }
    assert "disk" not in lines(room)
