"""`sp doctor`'s findings on the clients' entries: a good entry is ok, a stale one fails with
the command that rewrites it, and a client without an entry is not mentioned."""

from __future__ import annotations

from pathlib import Path

from safeport.context_server.mcp_clients.checks import client_findings, client_overview
from safeport.context_server.mcp_clients.install import Setup, install


def _setup(tmp_path: Path, env: dict[str, str]) -> Setup:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    return Setup("cursor", (project,), home=tmp_path / "user", env=env, platform="linux")


def test_an_entry_as_this_installation_writes_it_is_ok(tmp_path: Path) -> None:
    env = {"SAFEPORT_HOME": str(tmp_path / "sp")}
    setup = _setup(tmp_path, env)
    install(setup, replace=False)
    found = list(client_findings(setup.roots[0], home=setup.home, env=env, platform="linux"))
    assert [(f.check, f.state) for f in found] == [("client cursor", "ok")]


def test_an_entry_that_lost_its_home_fails_with_the_reinstall(tmp_path: Path) -> None:
    setup = _setup(tmp_path, {})  # installed without SAFEPORT_HOME
    install(setup, replace=False)
    env = {"SAFEPORT_HOME": str(tmp_path / "sp")}
    found = list(client_findings(setup.roots[0], home=setup.home, env=env, platform="linux"))
    assert [(f.check, f.state) for f in found] == [("client cursor", "fail")]
    assert "SAFEPORT_HOME" in found[0].detail
    assert found[0].fix == "sp client install cursor --replace"


def test_a_project_without_entries_gives_no_finding(tmp_path: Path) -> None:
    setup = _setup(tmp_path, {})
    assert list(client_findings(setup.roots[0], home=setup.home, env={}, platform="linux")) == []


def test_the_status_overview_lists_an_entry_with_what_differs(tmp_path: Path) -> None:
    setup = _setup(tmp_path, {})
    install(setup, replace=False)
    env = {"SAFEPORT_HOME": str(tmp_path / "sp")}
    (entry,) = client_overview(setup.roots[0], home=setup.home, env=env, platform="linux")
    assert entry["client"] == "cursor" and entry["profile"] == "reader"
    assert entry["ok"] is False and any("SAFEPORT_HOME" in p for p in entry["problems"])
    elsewhere = tmp_path / "other-user"
    assert client_overview(setup.roots[0], home=elsewhere, env=env, platform="linux") == []
