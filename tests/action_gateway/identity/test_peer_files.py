"""A requester's script is read only as far as the requester itself could read it.

The gateway runs as root here (as it may in same-user tests) or holds CAP_DAC_READ_SEARCH (the
dedicated account): a path taken from a requester's command line must not make the approval
card show the digest, or the existence, of a file that requester may not read.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from safeport.action_gateway.identity.linux import LinuxProbe
from safeport.action_gateway.identity.peer_files import PeerCredentials, PeerFiles
from tests.conftest import need

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")

NOBODY = 65534
AS_NOBODY = PeerCredentials(fsuid=NOBODY, fsgid=NOBODY, groups=frozenset())
SLEEP = "import time; time.sleep(30)\n"


@pytest.fixture
def shared() -> Iterator[Path]:
    """A folder under /tmp that every account can search (pytest's own are root's, 0700)."""
    need(os.geteuid() == 0, "files only root may read need the tests to run as root")
    base = Path(tempfile.mkdtemp(prefix="sp-peer-files-"))
    base.chmod(0o755)
    try:
        yield base
    finally:
        shutil.rmtree(base)


def _secret(folder: Path, name: str = "shadow") -> Path:
    secret = folder / name
    secret.write_text("root:$6$secret-hash:19000:0:99999:7:::\n")
    secret.chmod(0o600)
    return secret


def _as_nobody() -> PeerFiles:
    """This process's root, cwd and descriptors, with nobody's credentials."""
    return PeerFiles(Path(f"/proc/{os.getpid()}"), AS_NOBODY)


def test_a_file_only_root_may_read_is_neither_opened_nor_told_apart_from_a_missing_one(
    shared: Path,
) -> None:
    secret = _secret(shared)
    files = _as_nobody()
    assert files.open_file(str(secret)) is None
    assert files.open_file(str(shared / "missing")) is None
    assert not files.exists(str(shared / "missing"))


def test_a_readable_file_behind_a_folder_the_peer_cannot_search_is_not_opened(
    shared: Path,
) -> None:
    closed = shared / "closed"
    closed.mkdir(mode=0o700)
    inside = closed / "readable.py"
    inside.write_text(SLEEP)
    inside.chmod(0o644)
    files = _as_nobody()
    assert files.open_file(str(inside)) is None
    assert not files.exists(str(inside))
    assert files.list_folder(str(closed)) is None


def test_links_and_dot_dots_are_followed_as_the_peer_would_and_stay_checked(
    shared: Path,
) -> None:
    secret = _secret(shared)
    writable = shared / "tmp"
    writable.mkdir()
    writable.chmod(0o1777)
    link = writable / "run.py"
    link.symlink_to(secret)
    relative = writable / "up.py"
    relative.symlink_to("../shadow")
    files = _as_nobody()
    for path in (link, relative, writable / ".." / "shadow", f"/proc/self/root{secret}"):
        assert files.open_file(str(path)) is None, path
    # /proc's own links (another process's descriptors) are never followed.
    assert files.open_file(f"/proc/{os.getpid()}/fd/0") is None


def test_a_descriptor_the_peer_holds_without_read_access_does_not_open_the_file(
    shared: Path,
) -> None:
    # An O_PATH descriptor needs no read permission; reopening it through /proc/PID/fd with the
    # gateway's rights would read the file for the peer.
    secret = _secret(shared)
    handle = os.open(secret, os.O_PATH)
    try:
        assert _as_nobody().open_file(f"/dev/fd/{handle}") is None
        assert _as_nobody().open_file(f"/proc/self/fd/{handle}") is None
    finally:
        os.close(handle)


def test_what_the_peer_may_read_is_still_opened(shared: Path) -> None:
    script = shared / "tool.py"
    script.write_text(SLEEP)
    script.chmod(0o644)
    grouped = shared / "grouped.py"
    grouped.write_text(SLEEP)
    os.chown(grouped, 0, 4242)
    grouped.chmod(0o640)
    link = shared / "link.py"
    link.symlink_to("tool.py")
    files = _as_nobody()
    for path in (script, link, shared / "." / "tool.py"):
        fd = files.open_file(str(path))
        assert fd is not None, path
        os.close(fd)
    assert files.open_file(str(grouped)) is None
    member = PeerFiles(files.base, PeerCredentials(NOBODY, NOBODY, frozenset({4242})))
    fd = member.open_file(str(grouped))
    assert fd is not None
    os.close(fd)
    assert sorted(files.list_folder(str(shared)) or []) == ["grouped.py", "link.py", "tool.py"]
    # Root (or a peer holding CAP_DAC_READ_SEARCH) reads everything it names.
    fd = PeerFiles(files.base, PeerCredentials(0, 0, frozenset(), dac_override=True)).open_file(
        str(_secret(shared, "root-only"))
    )
    assert fd is not None
    os.close(fd)


def _nobody_running(script: Path) -> subprocess.Popen[bytes]:
    need(shutil.which("setpriv") is not None, "setpriv (util-linux) is not installed")
    drop = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    proc = subprocess.Popen([*drop, sys.executable, "-I", str(script)], cwd=script.parent)
    time.sleep(0.5)  # the interpreter has read its script
    return proc


def test_a_requester_pointing_its_script_at_a_root_only_file_gets_no_digest_of_it(
    shared: Path,
) -> None:
    # The requester runs a script of its own, then turns its name into a link to a file it may
    # not read, hoping the gateway digests that file for its approval card.
    secret = _secret(shared)
    writable = shared / "work"
    writable.mkdir(mode=0o777)
    writable.chmod(0o777)
    script = writable / "run.py"
    script.write_text(SLEEP)
    script.chmod(0o644)
    proc = _nobody_running(script)
    try:
        honest = LinuxProbe().chain(proc.pid)[0]
        swap = writable / "swap"
        swap.symlink_to(secret)
        swap.replace(script)
        head = LinuxProbe().chain(proc.pid)[0]
    finally:
        proc.kill()
        proc.wait()
    assert honest.uid == NOBODY
    assert honest.script_sha256 == hashlib.sha256(SLEEP.encode()).hexdigest()
    assert head.script_sha256 is None and head.script_signature == "unsupported"
    assert hashlib.sha256(secret.read_bytes()).hexdigest() not in repr(head)
