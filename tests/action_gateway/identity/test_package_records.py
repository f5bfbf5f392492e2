"""Linux "signatures": executables and scripts checked against the package records.

Against the real dpkg database and the real virtual environment where they exist, and against
fake dpkg admin folders and RECORD files for the cases a real system must never show (a file
changed since it was installed).
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from safeport.action_gateway.identity.digests import DigestCache
from safeport.action_gateway.identity.linux import LinuxProbe
from safeport.action_gateway.identity.package_records import FileDigests, InstalledFiles, Origin

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")

DPKG_PYTHON = Path("/usr/bin/python3.11")
HAVE_DPKG = DPKG_PYTHON.exists() and Path("/var/lib/dpkg/info/python3.11-minimal.list").exists()
VENV_SP = Path(sys.prefix) / "bin" / "sp"


def _origin(installed: InstalledFiles, path: Path) -> Origin:
    data = path.read_bytes()
    digests = FileDigests(hashlib.sha256(data).hexdigest(), lambda: hashlib.md5(data).hexdigest())
    return installed.origin(str(path), digests, path.stat())


def _running(argv: list[str]) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(argv)
    time.sleep(0.3)  # let the exec happen
    return proc


@pytest.mark.skipif(not HAVE_DPKG, reason="needs Debian's python3.11-minimal")
def test_a_packaged_interpreter_matches_its_dpkg_record() -> None:
    proc = _running([str(DPKG_PYTHON), "-c", "import time; time.sleep(20)"])
    try:
        head = LinuxProbe().chain(proc.pid)[0]
    finally:
        proc.kill()
        proc.wait()
    assert (head.signature, head.origin) == ("package", "dpkg python3.11-minimal")
    assert head.signature_text() == "dpkg python3.11-minimal: matches"


@pytest.mark.skipif(not HAVE_DPKG, reason="needs Debian's python3.11-minimal")
def test_a_copy_of_a_packaged_binary_elsewhere_is_not_from_a_package(tmp_path: Path) -> None:
    copy = tmp_path / "python3.11"
    shutil.copy2(DPKG_PYTHON, copy)
    proc = _running([str(copy), "-c", "import time; time.sleep(20)"])
    try:
        head = LinuxProbe().chain(proc.pid)[0]
    finally:
        proc.kill()
        proc.wait()
    assert head.signature == "not-packaged"
    assert head.signature_text() == "not from a package"


def _fake_dpkg(root: Path, package: str, path: Path, md5: str) -> Path:
    info = root / "info"
    info.mkdir(parents=True)
    (info / f"{package}:amd64.list").write_text(f"/.\n{path.parent}\n{path}\n")
    (info / f"{package}:amd64.md5sums").write_text(f"{md5}  {str(path).lstrip('/')}\n")
    return root


def test_a_file_whose_dpkg_digest_differs_is_modified(tmp_path: Path) -> None:
    target = tmp_path / "bin" / "tool"
    target.parent.mkdir()
    target.write_bytes(b"original")
    admin = _fake_dpkg(tmp_path / "dpkg", "tool", target, hashlib.md5(b"original").hexdigest())
    installed = InstalledFiles(admin, use_rpm=False, user_folders=())
    assert _origin(installed, target) == Origin("package", "dpkg tool")
    target.write_bytes(b"patched!")
    assert _origin(installed, target) == Origin("modified", "dpkg tool")


def test_dpkg_lists_are_read_again_after_an_install(tmp_path: Path) -> None:
    target = tmp_path / "tool"
    target.write_bytes(b"x")
    admin = tmp_path / "dpkg"
    (admin / "info").mkdir(parents=True)
    installed = InstalledFiles(admin, use_rpm=False, user_folders=())
    assert _origin(installed, target).status == "not-packaged"
    time.sleep(0.01)
    (admin / "info" / "tool.list").write_text(f"{target}\n")
    md5 = hashlib.md5(b"x").hexdigest()
    (admin / "info" / "tool.md5sums").write_text(f"{md5}  {str(target).lstrip('/')}\n")
    os.utime(admin / "info", ns=(time.time_ns(), time.time_ns() + 10**9))
    assert _origin(installed, target) == Origin("package", "dpkg tool")


def test_a_path_listed_without_a_digest_is_not_vouched_for(tmp_path: Path) -> None:
    target = tmp_path / "tool"
    target.write_bytes(b"x")
    admin = tmp_path / "dpkg"
    (admin / "info").mkdir(parents=True)
    (admin / "info" / "tool.list").write_text(f"{target}\n")
    assert (
        _origin(InstalledFiles(admin, use_rpm=False, user_folders=()), target).status
        == "not-packaged"
    )


def _venv_tree(root: Path, content: bytes, recorded: bytes) -> Path:
    """A venv-like tree: bin/tool and a RECORD in lib/python3.11/site-packages."""
    site = root / "lib" / "python3.11" / "site-packages"
    info = site / "demo_dist-1.2.3.dist-info"
    info.mkdir(parents=True)
    (root / "bin").mkdir()
    (root / "bin" / "tool").write_bytes(content)
    digest = base64.urlsafe_b64encode(hashlib.sha256(recorded).digest()).rstrip(b"=").decode()
    (info / "RECORD").write_text(
        f"../../../bin/tool,sha256={digest},{len(recorded)}\ndemo_dist-1.2.3.dist-info/RECORD,,\n"
    )
    return root / "bin" / "tool"


def test_a_venv_script_matching_its_pip_record_matches(tmp_path: Path) -> None:
    tool = _venv_tree(tmp_path / "env", b"#!/bin/sh\n", b"#!/bin/sh\n")
    found = _origin(InstalledFiles(None, use_rpm=False), tool)
    assert found == Origin(
        "package" if os.geteuid() == 0 else "user-package", "pip demo_dist 1.2.3"
    )


def test_a_venv_script_differing_from_its_pip_record_is_modified(tmp_path: Path) -> None:
    tool = _venv_tree(tmp_path / "env", b"#!/bin/sh\nevil\n", b"#!/bin/sh\n")
    assert _origin(InstalledFiles(None, use_rpm=False), tool).status == "modified"


def test_a_record_a_user_could_rewrite_vouches_only_for_consistency(tmp_path: Path) -> None:
    tool = _venv_tree(tmp_path / "env", b"#!/bin/sh\n", b"#!/bin/sh\n")
    record = next((tmp_path / "env").glob("lib/*/site-packages/*.dist-info/RECORD"))
    record.chmod(0o666)
    assert _origin(InstalledFiles(None, use_rpm=False), tool).status == "user-package"


@pytest.mark.skipif(not VENV_SP.exists(), reason="needs `sp` installed in this environment")
def test_an_interpreter_running_the_installed_sp_shows_its_pip_record(tmp_path: Path) -> None:
    from importlib.metadata import version

    (tmp_path / "ws").mkdir()
    # The context server waits on its stdin: a real interpreter running the real `sp` script.
    proc = subprocess.Popen(
        [sys.executable, str(VENV_SP), "context", "serve", "--root", str(tmp_path / "ws")],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={"PATH": "/usr/bin:/bin", "SAFEPORT_HOME": str(tmp_path), "HOME": str(tmp_path)},
    )
    time.sleep(0.5)
    try:
        head = LinuxProbe().chain(proc.pid)[0]
    finally:
        proc.kill()
        proc.wait()
    assert head.script == str(VENV_SP)
    assert head.script_origin == f"pip safeport {version('safeport')}"
    assert head.script_signature in ("package", "user-package")
    assert head.script_sha256 == hashlib.sha256(VENV_SP.read_bytes()).hexdigest()


def test_md5_is_taken_only_for_a_file_dpkg_claims(tmp_path: Path) -> None:
    # MD5 is slower than SHA-256; a file no dpkg record names must never be read for it.
    target = tmp_path / "tool"
    target.write_bytes(b"x")
    asked: list[str] = []

    def md5() -> str:
        asked.append("md5")
        return hashlib.md5(b"x").hexdigest()

    digests = FileDigests(hashlib.sha256(b"x").hexdigest(), md5)
    admin = tmp_path / "dpkg"
    (admin / "info").mkdir(parents=True)
    installed = InstalledFiles(admin, use_rpm=False, user_folders=())
    assert installed.origin(str(target), digests, target.stat()).status == "not-packaged"
    assert asked == []
    _fake_dpkg(tmp_path / "dpkg2", "tool", target, hashlib.md5(b"x").hexdigest())
    claimed = InstalledFiles(tmp_path / "dpkg2", use_rpm=False, user_folders=())
    assert claimed.origin(str(target), digests, target.stat()).status == "package"
    assert asked == ["md5"]


def test_digests_are_cached_by_file_identity(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_bytes(b"abc")
    cache = DigestCache()
    fd = os.open(target, os.O_RDONLY)
    try:
        assert cache.digest_fd(fd) == hashlib.sha256(b"abc").hexdigest()
        assert cache.md5_fd(fd) == hashlib.md5(b"abc").hexdigest()
        assert cache.digest_fd(fd) == hashlib.sha256(b"abc").hexdigest()
    finally:
        os.close(fd)


def test_a_file_in_a_users_folder_is_never_looked_up_in_the_system_records(tmp_path: Path) -> None:
    # Even a (fake) dpkg record naming it is not consulted: no system package installs there.
    target = tmp_path / "tool"
    target.write_bytes(b"x")
    admin = _fake_dpkg(tmp_path / "dpkg", "tool", target, hashlib.md5(b"x").hexdigest())
    assert _origin(InstalledFiles(admin, use_rpm=False), target).status == "not-packaged"
    strict = InstalledFiles(admin, use_rpm=False, user_folders=())
    assert _origin(strict, target).status == "package"
