"""Locations follow SAFEPORT_HOME, XDG and macOS; private folders are checked before use."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from safeport.errors import EnvironmentProblem
from safeport.shared.paths import check_socket_path, ensure_private_dir, locate, private_dir_problem


def test_safeport_home_puts_everything_under_one_folder() -> None:
    paths = locate({"SAFEPORT_HOME": "/srv/sp"}, platform="linux", home=Path("/home/u"), uid=1000)
    assert paths.gateway_config == Path("/srv/sp/gateway.toml")
    assert paths.context_config == Path("/srv/sp/context.toml")
    assert paths.vault_file == Path("/srv/sp/vault.sp")
    assert paths.vault_public_file == Path("/srv/sp/vault.pub.json")
    assert paths.audit_dir == Path("/srv/sp/audit")
    assert paths.cache_dir == Path("/srv/sp/cache")
    assert paths.agent_socket == Path("/srv/sp/run/agent.sock")
    assert paths.control_socket == Path("/srv/sp/run/control.sock")


def test_a_relative_safeport_home_is_refused() -> None:
    with pytest.raises(EnvironmentProblem, match="absolute"):
        locate({"SAFEPORT_HOME": "rel/dir"}, platform="linux", home=Path("/h"), uid=1)


def test_linux_uses_xdg_folders() -> None:
    env = {
        "XDG_CONFIG_HOME": "/x/config",
        "XDG_DATA_HOME": "/x/data",
        "XDG_STATE_HOME": "/x/state",
        "XDG_CACHE_HOME": "/x/cache",
        "XDG_RUNTIME_DIR": "/run/user/1000",
    }
    paths = locate(env, platform="linux", home=Path("/home/u"), uid=1000)
    assert paths.config_dir == Path("/x/config/safeport")
    assert paths.data_dir == Path("/x/data/safeport")
    assert paths.audit_dir == Path("/x/state/safeport/audit")
    assert paths.cache_dir == Path("/x/cache/safeport")
    assert paths.run_dir == Path("/run/user/1000/safeport")


def test_linux_defaults_and_the_tmp_fallback_without_a_runtime_dir() -> None:
    paths = locate(
        {"XDG_CONFIG_HOME": "relative/ignored"}, platform="linux", home=Path("/home/u"), uid=42
    )
    assert paths.config_dir == Path("/home/u/.config/safeport")
    assert paths.data_dir == Path("/home/u/.local/share/safeport")
    assert paths.audit_dir == Path("/home/u/.local/state/safeport/audit")
    assert paths.cache_dir == Path("/home/u/.cache/safeport")
    assert paths.run_dir == Path("/tmp/safeport-42")


def test_macos_uses_application_support() -> None:
    paths = locate({}, platform="darwin", home=Path("/Users/u"), uid=501)
    assert paths.config_dir == Path("/Users/u/Library/Application Support/safeport")
    assert paths.vault_file.parent == paths.config_dir


def test_private_dirs_lists_every_location() -> None:
    paths = locate({"SAFEPORT_HOME": "/s"}, platform="linux", home=Path("/h"), uid=1)
    assert set(paths.private_dirs()) >= {Path("/s"), Path("/s/audit"), Path("/s/run")}


def test_ensure_private_dir_creates_0700(tmp_path: Path) -> None:
    target = ensure_private_dir(tmp_path / "run")
    assert target.stat().st_mode & 0o777 == 0o700


def test_a_symlinked_run_dir_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "run").symlink_to(real)
    with pytest.raises(EnvironmentProblem, match="symbolic link"):
        ensure_private_dir(tmp_path / "run")


def test_an_open_run_dir_is_refused(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    os.chmod(run, 0o755)
    with pytest.raises(EnvironmentProblem, match="0755"):
        ensure_private_dir(run)


def test_a_run_dir_owned_by_someone_else_is_refused(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    st = os.lstat(run)
    assert private_dir_problem(st, st.st_uid + 1) == "is owned by another user"
    with pytest.raises(EnvironmentProblem, match="another user"):
        ensure_private_dir(run, uid=st.st_uid + 1)


def test_a_socket_path_over_the_limit_is_a_clear_error() -> None:
    long = Path("/tmp/" + "d" * 120 + "/agent.sock")
    with pytest.raises(EnvironmentProblem, match="over this system's limit"):
        check_socket_path(long, platform="linux")
    assert check_socket_path(Path("/tmp/x/agent.sock"), platform="linux")
