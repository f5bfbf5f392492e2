"""`sp gateway install` plans its steps purely; the plan, the unit and the code check are tested
here without touching the system (the real install runs in test_dedicated_account_e2e.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from safeport.action_gateway.identity.capabilities import has_capability
from safeport.action_gateway.install import code_check
from safeport.action_gateway.install.code_check import code_write_problem
from safeport.action_gateway.install.plan import (
    InstallOptions,
    SystemFacts,
    plan_install,
    plan_uninstall,
)
from safeport.action_gateway.install.root_checks import check_prefix
from safeport.action_gateway.install.start_checks import code_roots
from safeport.action_gateway.install.steps import Step, make_folder
from safeport.errors import EnvironmentProblem, UsageError
from safeport.shared.text_lines import split_lines
from tests.conftest import need

OPTIONS = InstallOptions(
    account="safeport",
    humans=("alice",),
    python="/opt/safeport/bin/python",
    base_python="/usr/bin/python3.11",
    code=(Path("/opt/safeport"), Path("/usr/lib/python3.11")),
)
NEW = SystemFacts(account_uid=None, account_gid=None, humans={"alice": 1000})
EXISTING = SystemFacts(account_uid=990, account_gid=990, humans={"alice": 1000})


def test_a_new_install_creates_the_account_first_then_folders_anchor_and_unit() -> None:
    steps = plan_install(OPTIONS, NEW)
    assert steps[0].run is not None and steps[0].run[:2] == ("useradd", "--system")
    assert "/usr/sbin/nologin" in steps[0].run
    assert steps[1].run == ("usermod", "--append", "--groups", "safeport", "alice")
    folders = {step.folder: step.mode for step in steps if step.folder is not None}
    assert folders == {
        Path("/var/lib/safeport"): 0o750,
        Path("/var/lib/safeport/audit"): 0o750,
        Path("/var/lib/safeport/cache"): 0o700,
        Path("/run/safeport"): 0o750,
    }
    files = [step for step in steps if step.file is not None]
    assert [f.file for f in files] == [
        Path("/etc/safeport/check_code.py"),
        Path("/etc/safeport/install.toml"),
        Path("/etc/systemd/system/safeport-gateway.service"),
    ]
    assert all(f.owner == (0, 0) and f.mode == 0o644 for f in files)
    assert files[0].content == Path(code_check.__file__).read_text()


def test_an_existing_account_is_reused_and_named_in_the_anchor() -> None:
    steps = plan_install(OPTIONS, EXISTING)
    assert all(step.run is None or step.run[0] != "useradd" for step in steps)
    anchor = next(s for s in steps if s.file == Path("/etc/safeport/install.toml"))
    assert "uid = 990" in anchor.content and "humans = [1000]" in anchor.content
    assert all(s.owner == (990, 990) for s in steps if s.folder is not None)


def _unit(options: InstallOptions) -> str:
    steps = plan_install(options, EXISTING)
    return next(s.content for s in steps if s.file and s.file.suffix == ".service")


def test_the_unit_runs_the_installed_interpreter_as_its_account_with_two_capabilities() -> None:
    text = _unit(OPTIONS)
    assert "ExecStart=/opt/safeport/bin/python -I -m safeport gateway run" in text
    assert "User=safeport" in text and "Group=safeport" in text
    assert "Environment=SAFEPORT_GATEWAY=/etc/safeport/install.toml" in text
    assert "AmbientCapabilities=CAP_SYS_PTRACE CAP_DAC_READ_SEARCH" in text
    assert "CapabilityBoundingSet=CAP_SYS_PTRACE CAP_DAC_READ_SEARCH" in text
    assert (
        "ExecStartPre=/usr/bin/python3.11 -I -S /etc/safeport/check_code.py /opt/safeport "
        "/usr/lib/python3.11" in text.splitlines()
    )
    for line in ("NoNewPrivileges=yes", "Restart=always", "ProtectSystem=strict",
                 "ProtectHome=read-only", "PrivateTmp=yes", "StateDirectory=safeport",
                 "RuntimeDirectory=safeport", "LimitCORE=0", "UMask=0027"):  # fmt: skip
        assert line in text.splitlines(), line


def test_a_prefix_install_names_its_folders_instead_of_systemd_managed_ones() -> None:
    unit = _unit(InstallOptions(account="safeport", humans=("alice",), prefix=Path("/tmp/try")))
    assert "ReadWritePaths=/tmp/try/var/lib/safeport /tmp/try/run/safeport" in unit
    assert "StateDirectory" not in unit


def test_macos_gets_a_launch_daemon_and_never_an_invented_account() -> None:
    mac = InstallOptions(account="_safeport", humans=("alice",), platform="darwin")
    with pytest.raises(EnvironmentProblem, match="no account"):
        plan_install(mac, NEW)
    steps = plan_install(mac, EXISTING)
    plist = steps[-1]
    assert plist.file == Path("/Library/LaunchDaemons/dev.safeport.gateway.plist")
    assert "<key>UserName</key><string>_safeport</string>" in plist.content


def test_an_install_needs_a_human_who_is_not_the_account() -> None:
    with pytest.raises(UsageError, match="--human"):
        plan_install(InstallOptions(account="safeport", humans=()), NEW)
    with pytest.raises(UsageError, match="cannot be one of its humans"):
        plan_install(InstallOptions(account="safeport", humans=("safeport",)), NEW)


def test_uninstall_keeps_the_evidence_unless_purged() -> None:
    kept = plan_uninstall(OPTIONS, EXISTING, purge=False)
    assert all(step.remove for step in kept)
    assert Path("/var/lib/safeport") not in {step.folder for step in kept}
    purged = plan_uninstall(OPTIONS, EXISTING, purge=True)
    assert Path("/var/lib/safeport") in {step.folder for step in purged}
    assert purged[-1].run == ("userdel", "safeport")


def test_code_a_user_could_change_is_found(tmp_path: Path) -> None:
    tree = tmp_path / "venv" / "lib"
    tree.mkdir(parents=True)
    (tree / "mod.py").write_text("")
    trusted = {os.geteuid()}
    tmp_path.chmod(0o755)
    assert code_write_problem([tmp_path / "venv"], trusted=trusted | {0}) is None
    (tree / "mod.py").chmod(0o666)
    problem = code_write_problem([tmp_path / "venv"], trusted=trusted | {0})
    assert problem is not None and "mod.py" in problem and "writable" in problem
    (tree / "mod.py").chmod(0o644)
    if os.geteuid() == 0:  # a file another user owns (they could chmod it and write)
        os.chown(tree / "mod.py", 65534, 65534)
        problem = code_write_problem([tmp_path / "venv"], trusted={0})
        assert problem is not None and "owned by uid 65534" in problem


def test_a_sticky_world_writable_parent_is_allowed_a_plain_one_is_not(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "venv").mkdir()
    tmp_path.chmod(0o755)
    trusted = {0, os.geteuid()}
    shared.chmod(0o1777)  # like /tmp: others cannot replace what they do not own
    assert code_write_problem([shared / "venv"], trusted=trusted) is None
    shared.chmod(0o777)
    problem = code_write_problem([shared / "venv"], trusted=trusted)
    assert problem is not None and str(shared) in problem


def test_the_capability_reader_reads_the_effective_set(tmp_path: Path) -> None:
    status = tmp_path / "status"
    status.write_text("Name:\tx\nCapEff:\t0000000000080004\n")
    assert has_capability(19, status) and has_capability(2, status)
    assert not has_capability(1, status)
    assert not has_capability(19, tmp_path / "missing")


def test_the_pre_start_check_runs_with_no_site_packages_and_refuses_writable_code(
    tmp_path: Path,
) -> None:
    """What the unit's ExecStartPre runs: the checker file by path under `-I -S`."""
    venv = tmp_path / "venv"
    site = venv / "lib" / "site-packages"
    site.mkdir(parents=True)
    tmp_path.chmod(0o755)
    marker = tmp_path / "ran"
    (site / "evil.pth").write_text(f"import os; open({str(marker)!r}, 'w')\n")
    checker = [sys.executable, "-I", "-S", code_check.__file__]
    ok = subprocess.run([*checker, str(venv)], capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr
    (site / "evil.pth").chmod(0o666)
    refused = subprocess.run([*checker, str(venv)], capture_output=True, text=True, timeout=60)
    assert refused.returncode == 1
    assert "evil.pth" in refused.stderr and "refusing to start the gateway" in refused.stderr
    assert not marker.exists()
    usage = subprocess.run([*checker, "relative"], capture_output=True, text=True, timeout=60)
    assert usage.returncode == 2


@pytest.mark.skipif(os.geteuid() != 0, reason="making a folder another user owns needs root")
def test_an_install_prefix_under_a_folder_a_user_can_change_is_refused(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)
    with pytest.raises(EnvironmentProblem, match="only root can change"):
        check_prefix(theirs / "p")
    check_prefix(tmp_path / "mine" / "p")


def test_a_folder_swapped_for_a_link_is_never_chowned(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir(mode=0o700)
    link = tmp_path / "run"
    link.symlink_to(target)
    with pytest.raises(EnvironmentProblem, match="not a folder"):
        make_folder(link, 0o755, (os.geteuid(), os.getegid()))
    assert target.stat().st_mode & 0o777 == 0o700


def test_systemd_accepts_the_unit_as_written(tmp_path: Path) -> None:
    need(shutil.which("systemd-analyze") is not None, "systemd-analyze (systemd) is not installed")
    facts = SystemFacts(account_uid=990, account_gid=990, humans={"root": 0})
    options = InstallOptions(account="daemon", humans=("root",))
    unit = tmp_path / "safeport-gateway.service"
    unit.write_text(
        next(s.content for s in plan_install(options, facts) if s.file == options.service_file)
    )
    done = subprocess.run(
        ["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "Unknown key" not in done.stderr and "Invalid" not in done.stderr, done.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="making a file another user owns needs root")
def test_a_trusted_link_to_a_file_a_user_owns_is_refused(tmp_path: Path) -> None:
    """Debian's sitecustomize.py is a link into /etc: what a link leads to runs too."""
    tmp_path.chmod(0o755)
    venv = tmp_path / "venv"
    venv.mkdir()
    theirs = tmp_path / "theirs.py"
    theirs.write_text("")
    (venv / "zz.pth").symlink_to(theirs)
    assert code_write_problem([venv], trusted={0}) is None
    os.chown(theirs, 65534, 65534)
    problem = code_write_problem([venv], trusted={0})
    assert problem is not None and "leads to" in problem and "65534" in problem


def test_the_interpreter_and_its_libpython_are_among_the_checked_roots() -> None:
    roots = code_roots()
    assert Path(os.path.realpath(getattr(sys, "_base_executable", sys.executable))) in roots


def test_a_file_steps_content_is_shown_one_line_per_line_the_file_holds() -> None:
    """A character other than "\\n" that a terminal or `str.splitlines` would break at stays
    inside its line, so what `sp gateway install` shows is what the file will hold."""
    step = Step("write the unit", file=Path("/etc/x"), content="a\u2028b\x85c\rd\nnext\n")
    shown = split_lines(step.render())
    assert shown[-2:] == ["    | a\u2028b\x85c\rd", "    | next"]


def test_a_short_print_names_the_account_and_leaves_file_contents_to_verbose() -> None:
    steps = plan_install(OPTIONS, NEW)
    short = "\n".join(step.render(verbose=False) for step in steps)
    assert "owner -1" not in short and "owner safeport" in short
    assert "[Service]" not in short and "--verbose shows it" in short
    assert len(short.splitlines()) <= 2 * len(steps)  # two lines a step, whatever the files hold
    whole = "\n".join(step.render() for step in steps)
    assert "[Service]" in whole and "owner -1" not in whole


def test_without_systemd_a_start_script_becomes_the_account_with_the_units_two_capabilities() -> (
    None
):
    options = InstallOptions(**{**OPTIONS.__dict__, "init": "script"})
    [script] = [s for s in plan_install(options, EXISTING) if s.file == options.service_file]
    assert script.file == Path("/etc/safeport/gateway-start") and script.mode == 0o755
    text = script.content
    assert text.startswith("#!/bin/sh\n") and "set -eu" in text
    precheck, start = [line for line in text.splitlines() if line.startswith(("setpriv", "exec"))]
    for line in (precheck, start):
        assert "--reuid=safeport --regid=safeport --init-groups" in line
        assert "--bounding-set=-all,+sys_ptrace,+dac_read_search --no-new-privs" in line
        assert "/usr/bin/env -i" in line and "SAFEPORT_GATEWAY=/etc/safeport/install.toml" in line
    assert "/usr/bin/python3.11 -I -S /etc/safeport/check_code.py /opt/safeport" in precheck
    assert start.startswith("exec ") and start.endswith("gateway run")
    uninstall = plan_uninstall(OPTIONS, EXISTING, purge=False)
    assert Path("/etc/safeport/gateway-start") in {step.file for step in uninstall}
