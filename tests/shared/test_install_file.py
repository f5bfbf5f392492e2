"""The install file is the dedicated mode's anchor: parsed strictly, trusted only when root alone
can change it, and it decides what every process sees as its locations."""

from __future__ import annotations

import dataclasses
import os
import socket
from pathlib import Path

import pytest

from safeport.errors import ConfigError, EnvironmentProblem
from safeport.shared import install_file
from safeport.shared.gateway_socket import ImpostorGateway, check_listener, check_socket_folder
from safeport.shared.install_file import (
    DedicatedInstall,
    install_file_in,
    load_install,
    parse_install,
    render_install,
)
from safeport.shared.paths import SafeportPaths, locate

SOURCE = Path("/etc/safeport/install.toml")
GOOD = """
account = "safeport"
uid = 990
gid = 990
state_dir = "/var/lib/safeport"
run_dir = "/run/safeport"
humans = [1000, 1001]
"""


def test_a_well_formed_file_parses_and_renders_back() -> None:
    install = parse_install(GOOD, SOURCE)
    assert install.account == "safeport" and install.humans == (1000, 1001)
    assert install.audit_dir == Path("/var/lib/safeport/audit")
    again = parse_install(render_install(install, {1000: "alice", 1001: "bob"}), SOURCE)
    assert again == install


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("uid = 990", "uid = 0"), "never root"),
        (("uid = 990", "uid = true"), "uid must be"),
        (('account = "safeport"', 'account = "Safe Port"'), "account must be"),
        (("humans = [1000, 1001]", "humans = []"), "at least one uid"),
        (("humans = [1000, 1001]", "humans = [990]"), "own account cannot"),
        (('run_dir = "/run/safeport"', 'run_dir = "run/safeport"'), "absolute"),
        (('run_dir = "/run/safeport"', 'run_dir = "/run/safeport"\nextra = 1'), "unknown keys"),
        (("gid = 990\n", ""), "no gid"),
        (("[", "["), "not valid TOML"),
    ],
)
def test_every_malformed_file_is_refused_with_its_reason(
    edit: tuple[str, str], message: str
) -> None:
    text = GOOD.replace(*edit) if edit[0] != "[" else GOOD + "\n[broken"
    with pytest.raises(ConfigError, match=message):
        parse_install(text, SOURCE)


def test_which_file_applies() -> None:
    assert install_file_in({"SAFEPORT_GATEWAY": "/x/install.toml"}, use_default=True) == Path(
        "/x/install.toml"
    )
    # SAFEPORT_HOME chooses a self-contained same-user folder; the default is never looked for.
    assert install_file_in({"SAFEPORT_HOME": "/h"}, use_default=True) is None
    assert install_file_in({}, use_default=False) is None
    with pytest.raises(EnvironmentProblem, match="absolute"):
        install_file_in({"SAFEPORT_GATEWAY": "rel.toml"}, use_default=True)


def _write_install(folder: Path, text: str, mode: int = 0o644) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "install.toml"
    path.write_text(text)
    path.chmod(mode)
    return path


@pytest.mark.skipif(os.geteuid() != 0, reason="the anchor must be root's: only root can make one")
def test_a_file_anyone_but_root_can_change_is_refused(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    path = _write_install(tmp_path / "etc", GOOD)
    assert load_install(path).account == "safeport"
    path.chmod(0o664)
    with pytest.raises(EnvironmentProblem, match="writable by others"):
        load_install(path)
    path.chmod(0o644)
    os.chown(path, 65534, 65534)
    with pytest.raises(EnvironmentProblem, match="not owned by root"):
        load_install(path)
    os.chown(path, 0, 0)
    (tmp_path / "etc").chmod(0o777)  # a folder above it anyone may write: the file can be swapped
    with pytest.raises(EnvironmentProblem, match="could be swapped"):
        load_install(path)
    (tmp_path / "etc").chmod(0o755)
    link = tmp_path / "link.toml"
    link.symlink_to(path)
    with pytest.raises(EnvironmentProblem):
        load_install(link)


@pytest.mark.skipif(os.geteuid() != 0, reason="the anchor must be root's: only root can make one")
def test_locations_follow_the_install_for_the_account_and_for_a_human(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    path = _write_install(tmp_path / "etc", GOOD)
    env = {"SAFEPORT_GATEWAY": str(path), "HOME": "/home/alice"}
    human = locate(env, platform="linux", home=Path("/home/alice"), uid=1000)
    assert human.dedicated and human.gateway_uid == 990
    assert human.control_socket == Path("/run/safeport/control.sock")
    assert human.config_dir == Path("/home/alice/.config/safeport")  # their own policy draft
    assert human.audit_dir == Path("/home/alice/.local/state/safeport/audit")  # their reads
    assert human.gateway_audit_dir == Path("/var/lib/safeport/audit")
    assert human.journal_dirs == (human.gateway_audit_dir, human.audit_dir)
    account = locate(env, platform="linux", home=Path("/nonexistent"), uid=990)
    assert account.vault_file == Path("/var/lib/safeport/vault.sp")
    assert account.gateway_config == Path("/var/lib/safeport/gateway.toml")
    assert account.audit_dir == account.gateway_audit_dir == Path("/var/lib/safeport/audit")


def _dedicated(tmp_path: Path, run_dir: Path, uid: int) -> SafeportPaths:
    install = DedicatedInstall(
        source=tmp_path / "install.toml",
        account="safeport",
        uid=uid,
        gid=uid,
        state_dir=tmp_path / "state",
        run_dir=run_dir,
        humans=(os.geteuid() + 1,),
    )
    paths = locate({"SAFEPORT_HOME": str(tmp_path)})
    return dataclasses.replace(paths, run_dir=run_dir, install=install)


def test_a_socket_folder_others_can_write_is_refused_before_connecting(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir(mode=0o755)
    paths = _dedicated(tmp_path, run_dir, os.geteuid())
    check_socket_folder(paths)
    run_dir.chmod(0o775)
    with pytest.raises(ImpostorGateway, match="others can put a socket there"):
        check_socket_folder(paths)
    run_dir.chmod(0o755)
    other = _dedicated(tmp_path, run_dir, os.geteuid() + 7)
    with pytest.raises(ImpostorGateway, match="not by the gateway account"):
        check_socket_folder(other)
    with pytest.raises(EnvironmentProblem, match="not running"):
        check_socket_folder(_dedicated(tmp_path, tmp_path / "gone", os.geteuid()))


def test_a_listener_of_any_uid_but_the_accounts_is_refused(tmp_path: Path) -> None:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "s"))
    server.listen(1)
    client = socket.socket(socket.AF_UNIX)
    client.connect(str(tmp_path / "s"))
    try:
        check_listener(client, _dedicated(tmp_path, tmp_path, os.geteuid()))
        with pytest.raises(ImpostorGateway, match="nothing was sent"):
            check_listener(client, _dedicated(tmp_path, tmp_path, os.geteuid() + 3))
    finally:
        client.close()
        server.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="the anchor must be root's: only root can make one")
def test_safeport_home_turning_a_named_human_away_from_the_dedicated_gateway_is_said(
    tmp_path: Path,
) -> None:
    tmp_path.chmod(0o755)
    path = _write_install(tmp_path / "etc", GOOD)
    notice = install_file.downgrade_notice({"SAFEPORT_HOME": "/tmp/h"}, 1000, default=path)
    assert notice is not None and "not the safeport account's gateway" in notice
    assert (
        install_file.downgrade_notice({"SAFEPORT_HOME": "/tmp/h"}, 4242, default=path) is None
    )  # not named
    assert install_file.downgrade_notice({}, 1000, default=path) is None
    assert (
        install_file.downgrade_notice(
            {"SAFEPORT_HOME": "/h", "SAFEPORT_GATEWAY": str(path)}, 1000, default=path
        )
        is None
    )
