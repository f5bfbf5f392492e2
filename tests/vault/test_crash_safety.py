"""A save killed at any point leaves the old vault or the new one under the name, never neither.

A child process unlocks the vault and adds an entry; the test stops it at a chosen step of the
atomic save (by wrapping one ``os`` call in the child only), SIGKILLs it there, and opens what
is on disk.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from safeport.vault import VaultFile
from safeport.vault.secrets import SecretBytes
from tests.vault.vault_factory import PASSPHRASE, MemoryKeyring, make_vault, passphrase

CHILD = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    from safeport.vault import VaultFile
    from safeport.vault.secrets import SecretBytes

    path, point, secret = Path(sys.argv[1]), sys.argv[2], sys.stdin.buffer.read()
    vault = VaultFile(path).unlock(SecretBytes(secret))
    real = {"write": os.write, "fsync": os.fsync, "rename": os.rename}

    def stop():
        print("stopped", flush=True)
        time.sleep(120)

    def mid_write(fd, data):
        real["write"](fd, bytes(data[: len(data) // 2]))
        stop()

    def after_rename(src, dst):
        real["rename"](src, dst)
        stop()

    if point == "mid-write":
        os.write = mid_write
    elif point == "before-fsync":
        os.fsync = lambda fd: stop()
    elif point == "before-rename":
        os.rename = lambda src, dst: stop()
    elif point == "after-rename":
        os.rename = after_rename
    vault.add("added-by-child", "token", {"token": SecretBytes(b"child-value")})
    print("finished", flush=True)
    """
)


@pytest.mark.parametrize(
    ("point", "expect_new"),
    [
        ("mid-write", False),
        ("before-fsync", False),
        ("before-rename", False),
        ("after-rename", True),
    ],
)
def test_a_save_killed_midway_leaves_a_vault_that_opens(
    tmp_path: Path, point: str, expect_new: bool
) -> None:
    store, vault = make_vault(tmp_path)
    vault.lock()
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(store.path), point],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(PASSPHRASE)
    child.stdin.close()
    try:
        line = child.stdout.readline()
        assert line == b"stopped\n", child.stderr.read() if child.stderr else b""
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait(timeout=30)
        child.stdout.close()
        if child.stderr is not None:
            child.stderr.close()

    reopened = store.unlock(passphrase())
    names = [entry.name for entry in reopened.entries()]
    expected = ["deploy-token", "registry"] + (["added-by-child"] if expect_new else [])
    assert sorted(names) == sorted(expected)

    # The next save goes through and sweeps the temp file the killed one left behind.
    reopened.add("after-crash", "token", {"token": SecretBytes(b"v")})
    leftovers = [p.name for p in tmp_path.iterdir() if ".tmp-" in p.name]
    assert leftovers == []
    reopened.lock()
    assert "after-crash" in [
        e.name
        for e in VaultFile(store.path, keyring=MemoryKeyring()).unlock(passphrase()).entries()
    ]
