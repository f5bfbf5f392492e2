"""What a Python requester runs before its script: real venvs, real user sites, real processes.

Each requester runs as an unprivileged uid (65534) under the packaged ``/usr/bin/python3.11``; the
code it would plant writes a marker when CPython runs it, so every case checks the probe's
reading against what CPython actually did. Each attack sits beside the legitimate form that
must still be admitted.
"""

from __future__ import annotations

import grp
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from safeport.action_gateway.approvals.cards import _process_line
from safeport.action_gateway.identity.linux import LinuxProbe
from safeport.action_gateway.identity.model import PeerIdentity, ProcessInfo
from safeport.action_gateway.identity.python_startup import group_has_outsider
from safeport.action_gateway.policy.caller_rules import rule_matches
from safeport.cli.cards.card_text import process_text
from safeport.shared.schemas.config import CallerRule
from tests.conftest import need

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")

PYTHON = "/usr/bin/python3.11"
SITE = "lib/python3.11/site-packages"
AGENT = 65534
SLEEP = "import time; time.sleep(30)"
ANY_SCRIPT = CallerRule(signature="package", interpreter="any script")


@pytest.fixture
def shared() -> Iterator[Path]:
    """A folder the unprivileged requester can enter (pytest's own is root's, mode 0700)."""
    need(Path(PYTHON).exists(), f"{PYTHON} (Debian python3.11) is not installed")
    need(os.geteuid() == 0, "root, to run requesters as another uid")
    folder = Path(tempfile.mkdtemp(prefix="sp-startup-", dir="/tmp"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


def _venv(place: Path, *, system_site: str | None = "false", owner: int = 0) -> Path:
    subprocess.run([PYTHON, "-m", "venv", "--without-pip", str(place)], check=True)
    cfg = place / "pyvenv.cfg"
    lines = [ln for ln in cfg.read_text().splitlines() if "include-system" not in ln]
    if system_site is not None:
        lines.append(f"include-system-site-packages = {system_site}")
    cfg.write_text("\n".join(lines) + "\n")
    _own(place, owner)
    return place


def _own(place: Path, uid: int) -> None:
    for path in (place, *place.rglob("*")):
        os.chown(path, uid, uid, follow_symlinks=False)


def _marker_code(marker: Path) -> str:
    marker.parent.mkdir(exist_ok=True)
    os.chown(marker.parent, AGENT, AGENT)  # the requester writes it
    return f"import pathlib; pathlib.Path({str(marker)!r}).write_text('ran')"


def _home(shared: Path, **plant: str) -> Path:
    """The agent's HOME; ``plant`` puts files (name → text) in its user site."""
    home = shared / "home"
    site = home / ".local" / SITE
    site.mkdir(parents=True, exist_ok=True)
    for name, text in plant.items():
        (site / name).write_text(text)
    _own(home, AGENT)
    return home


def _run(python: str, home: Path, *flags: str) -> ProcessInfo:
    argv = [
        "setpriv", f"--reuid={AGENT}", f"--regid={AGENT}", "--clear-groups", "--",
        "env", "-i", f"HOME={home}", "PATH=/usr/bin:/bin", python, *flags, "-c", SLEEP,
    ]  # fmt: skip
    proc = subprocess.Popen(argv)
    try:
        time.sleep(0.5)
        return LinuxProbe().chain(proc.pid)[0]
    finally:
        proc.kill()
        proc.wait()


def _places(head: ProcessInfo) -> list[str]:
    return [place for place, _ in head.injected_env]


def _peer(head: ProcessInfo) -> PeerIdentity:
    return PeerIdentity(uid=head.uid, gid=head.uid, chain=(head,))


def test_a_pth_in_the_agents_venv_runs_before_the_packaged_interpreters_script(
    shared: Path,
) -> None:
    """The venv's python links to the packaged binary; its site folder is the agent's."""
    marker = shared / "marks" / "pth-ran"
    venv = _venv(shared / "venv")
    (venv / SITE / "zz.pth").write_text(_marker_code(marker) + "\n")
    _own(venv, AGENT)
    head = _run(str(venv / "bin" / "python3"), _home(shared))
    assert marker.exists()  # CPython ran it
    assert head.exe == PYTHON and head.signature == "package"
    assert "python venv" in _places(head), head.injected_env
    assert any("zz.pth" in value and "uid 65534" in value for _, value in head.injected_env)
    assert head.code_injected and not rule_matches(ANY_SCRIPT, _peer(head))
    line = process_text(_process_line(head).model_dump())
    assert "INJECTS CODE: python venv=" in line and "zz.pth" in line


def test_a_root_owned_isolated_venv_is_admitted(shared: Path) -> None:
    """The legitimate form: an installation's venv, root's, no user site (CPython's rule)."""
    marker = shared / "marks" / "usercustomize-ran"
    venv = _venv(shared / "venv")
    home = _home(shared, **{"usercustomize.py": _marker_code(marker)})
    head = _run(str(venv / "bin" / "python3"), home)
    assert not marker.exists()  # include-system-site-packages = false: no user site
    assert head.injected_env == () and not head.code_injected
    assert rule_matches(ANY_SCRIPT, _peer(head))
    assert not rule_matches(
        CallerRule(exe=head.exe, signature="package"), _peer(head)
    )  # still a claim


@pytest.mark.parametrize("system_site", ["true", None])
def test_a_venv_that_keeps_the_system_site_keeps_the_user_site_too(
    shared: Path, system_site: str | None
) -> None:
    """Being in a venv does not switch the user site off; only leaving the system site out does
    (and CPython's default, with no such line, is to keep it)."""
    marker = shared / "marks" / "usercustomize-ran"
    venv = _venv(shared / "venv", system_site=system_site)
    home = _home(shared, **{"usercustomize.py": _marker_code(marker)})
    head = _run(str(venv / "bin" / "python3"), home)
    assert marker.exists()
    assert "python user site" in _places(head), head.injected_env
    assert not rule_matches(ANY_SCRIPT, _peer(head))


def test_a_customize_module_in_a_folder_the_agent_owns_on_sys_path(shared: Path) -> None:
    """A root-owned .pth adds a folder the agent can write; `usercustomize` is imported from
    there before the script (Debian's stdlib holds a `sitecustomize`, which would win)."""
    marker = shared / "marks" / "usercustomize-ran"
    added = shared / "added"
    added.mkdir()
    (added / "usercustomize.py").write_text(_marker_code(marker))
    _own(added, AGENT)
    venv = _venv(shared / "venv", system_site="true")
    (venv / SITE / "extra.pth").write_text(f"{added}\n")
    head = _run(str(venv / "bin" / "python3"), _home(shared))
    assert marker.exists()
    assert "python .pth folder" in _places(head), head.injected_env
    assert not rule_matches(ANY_SCRIPT, _peer(head))


def test_a_venv_home_the_agent_can_change_supplies_the_standard_library(shared: Path) -> None:
    """`home` in pyvenv.cfg is where CPython looks for os.py and encodings."""
    fake = shared / "fakehome"
    shutil.copytree("/usr/lib/python3.11", fake / "lib" / "python3.11", symlinks=True)
    (fake / "bin").mkdir()
    _own(fake, AGENT)
    venv = _venv(shared / "venv")
    cfg = venv / "pyvenv.cfg"
    cfg.write_text(cfg.read_text().replace("home = /usr/bin", f"home = {fake / 'bin'}"))
    head = _run(str(venv / "bin" / "python3"), _home(shared))
    assert "python venv home" in _places(head), head.injected_env
    assert not rule_matches(ANY_SCRIPT, _peer(head))


def test_the_packaged_interpreter_without_its_user_site_is_admitted(shared: Path) -> None:
    marker = shared / "marks" / "pth-ran"
    home = _home(shared, **{"zz.pth": _marker_code(marker) + "\n"})
    flagged = _run(PYTHON, home)
    assert marker.exists() and _places(flagged) == ["python user site"]
    marker.unlink()
    for flags in (["-s"], ["-I"]):
        head = _run(PYTHON, home, *flags)
        assert not marker.exists() and head.injected_env == (), (flags, head.injected_env)
        assert rule_matches(ANY_SCRIPT, _peer(head))


def _stdlib_farm(shared: Path, marker: Path) -> Path:
    """A prefix the agent owns holding the two files getpath and the codec start need: os.py
    (the landmark) and an `encodings` package whose import writes ``marker``."""
    farm = shared / "farm"
    stdlib = farm / "lib" / "python3.11"
    stdlib.mkdir(parents=True)
    shutil.copy2("/usr/lib/python3.11/os.py", stdlib / "os.py")
    shutil.copytree("/usr/lib/python3.11/encodings", stdlib / "encodings")
    with open(stdlib / "encodings" / "__init__.py", "a") as init:
        # `open` is not a builtin yet while the filesystem codec loads; _io.open is.
        init.write(f"\nimport _io; _io.open({str(marker)!r}, 'w').write('ran')\n")
    (farm / "bin").mkdir()
    marker.parent.mkdir(exist_ok=True)
    os.chown(marker.parent, AGENT, AGENT)
    return farm


def _run_as(argv0: str, path: str, home: Path) -> ProcessInfo:
    """The packaged binary started with an argv[0] of the agent's choosing (`exec -a`)."""
    argv = [
        "setpriv", f"--reuid={AGENT}", f"--regid={AGENT}", "--clear-groups", "--",
        "env", "-i", f"HOME={home}", f"PATH={path}", "/bin/bash", "-c",
        f'exec -a "$0" {PYTHON} -c "$1"', argv0, SLEEP,
    ]  # fmt: skip
    proc = subprocess.Popen(argv, cwd="/")
    try:
        time.sleep(0.5)
        return LinuxProbe().chain(proc.pid)[0]
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("by_path", [False, True])
def test_an_argv0_in_the_agents_folder_brings_its_standard_library(
    shared: Path, by_path: bool
) -> None:
    """getpath searches up from argv[0] (or its PATH match), not from the binary the kernel
    ran, for lib/python3.11/os.py: the packaged binary then imports the agent's encodings."""
    marker = shared / "marks" / "stdlib-ran"
    farm = _stdlib_farm(shared, marker)
    program = farm / "bin" / "python3.11"
    if by_path:
        program.write_text("")
        program.chmod(0o755)  # getpath's PATH search wants an executable file
    _own(farm, AGENT)
    argv0 = "python3.11" if by_path else str(program)
    head = _run_as(argv0, f"{farm / 'bin'}:/usr/bin:/bin", _home(shared))
    assert marker.exists()  # CPython ran the agent's encodings
    assert head.exe == PYTHON and head.signature == "package"
    assert "python stdlib" in _places(head), head.injected_env
    assert not rule_matches(ANY_SCRIPT, _peer(head))
    assert "INJECTS CODE: python stdlib=" in process_text(_process_line(head).model_dump())


def test_a_link_to_the_packaged_interpreter_in_the_agents_folder_keeps_its_stdlib(
    shared: Path,
) -> None:
    """The legitimate twin: getpath follows a link to the binary's real folder, so the agent's
    lib beside the link is never read, and nothing is flagged."""
    marker = shared / "marks" / "stdlib-ran"
    farm = _stdlib_farm(shared, marker)
    (farm / "bin" / "python3.11").symlink_to(PYTHON)
    _own(farm, AGENT)
    head = _run_as(str(farm / "bin" / "python3.11"), "/usr/bin:/bin", shared / "no-home")
    assert not marker.exists()
    assert head.injected_env == () and rule_matches(ANY_SCRIPT, _peer(head))


@pytest.fixture
def group() -> Iterator[str]:
    """A fresh group with no members, like Debian's `staff` on a machine nobody was added to."""
    need(shutil.which("groupadd") is not None, "groupadd (passwd) is not installed")
    name = f"spg{os.getpid() % 100000}"
    subprocess.run(["groupadd", name], check=True)
    try:
        yield name
    finally:
        subprocess.run(["groupdel", name], check=True)


def _group_writable_site(shared: Path, group: str, marker: Path) -> Path:
    """A root-owned venv whose site folder is root:GROUP 2775 (Debian's /usr/local/lib/python3.X
    is root:staff 2775) and holds root's own .pth."""
    venv = _venv(shared / "venv", system_site="false")
    site = venv / SITE
    (site / "root.pth").write_text(_marker_code(marker) + "\n")
    os.chown(site, 0, grp.getgrnam(group).gr_gid)
    site.chmod(0o2775)
    return venv


def test_a_site_folder_writable_by_a_group_nobody_else_holds_is_admitted(
    shared: Path, group: str
) -> None:
    marker = shared / "marks" / "pth-ran"
    venv = _group_writable_site(shared, group, marker)
    head = _run(str(venv / "bin" / "python3"), _home(shared))
    assert marker.exists()  # root's .pth ran: that is the installation's own code
    assert head.injected_env == () and rule_matches(ANY_SCRIPT, _peer(head))


def test_a_site_folder_writable_by_a_group_with_another_member_is_injected_code(
    shared: Path, group: str
) -> None:
    venv = _group_writable_site(shared, group, shared / "marks" / "pth-ran")
    subprocess.run(["gpasswd", "-a", "nobody", group], check=True, capture_output=True)
    head = _run(str(venv / "bin" / "python3"), _home(shared))
    assert "python venv" in _places(head), head.injected_env
    assert any(f"by group {grp.getgrnam(group).gr_gid}" in v for _, v in head.injected_env)
    assert not rule_matches(ANY_SCRIPT, _peer(head))


def test_a_group_the_requester_holds_counts_even_when_no_account_lists_it(
    shared: Path, group: str
) -> None:
    """The process's own groups are the kernel's word, whatever /etc/group says now."""
    venv = _group_writable_site(shared, group, shared / "marks" / "pth-ran")
    gid = grp.getgrnam(group).gr_gid
    argv = [
        "setpriv", f"--reuid={AGENT}", f"--regid={AGENT}", f"--groups={gid}", "--",
        str(venv / "bin" / "python3"), "-c", SLEEP,
    ]  # fmt: skip
    proc = subprocess.Popen(argv, env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"})
    try:
        time.sleep(0.5)
        head = LinuxProbe().chain(proc.pid)[0]
    finally:
        proc.kill()
        proc.wait()
    assert "python venv" in _places(head), head.injected_env


def test_group_members_outside_the_trusted_owners_decide() -> None:
    trusted = frozenset({0, 997})
    assert not group_has_outsider(True, frozenset(), trusted)
    assert not group_has_outsider(True, frozenset({0, 997}), trusted)
    assert group_has_outsider(True, frozenset({0, 1000}), trusted)
    assert group_has_outsider(True, frozenset({-1}), trusted)  # a listed name with no account
    assert group_has_outsider(False, frozenset(), trusted)  # a group nobody knows
