"""Permission checks seen by an unprivileged user: as root every check would pass vacuously.

Each case runs `sp vault list` under ``setpriv --reuid=65534`` against a vault home that user
owns, so the checks are the only thing between the command and the file.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.cli_runner import run_sp
from tests.conftest import need
from tests.vault.vault_factory import CANARY_TOKEN, PASSPHRASE, make_vault

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.vault"

NOBODY = 65534
DROP = ("setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups")


@pytest.fixture
def nobody_home() -> Iterator[Path]:
    need(os.geteuid() == 0, "dropping to an unprivileged uid needs root")
    need(shutil.which("setpriv") is not None, "setpriv (util-linux) is not installed")
    # Under /tmp, not pytest's root-only tmp_path, so the dropped user can reach it.
    base = Path(tempfile.mkdtemp(prefix="sp-nobody-"))
    base.chmod(0o755)
    home = base / "home"
    home.mkdir(mode=0o700)
    make_vault(home)[1].lock()
    for path in [home, *home.iterdir()]:
        os.chown(path, NOBODY, NOBODY, follow_symlinks=False)
    try:
        yield home
    finally:
        shutil.rmtree(base)


def _list_as_nobody(home: Path) -> tuple[int, str, str]:
    done = run_sp(
        "vault", "list", "--passphrase-file", "-", home=home, stdin=PASSPHRASE, prefix=DROP
    )
    assert CANARY_TOKEN.decode() not in done.stdout + done.stderr
    return done.returncode, done.stdout, done.stderr


def test_the_owner_can_use_a_0600_vault(nobody_home: Path) -> None:
    code, out, err = _list_as_nobody(nobody_home)
    assert code == 0, err
    assert "deploy-token  token" in out


def test_a_group_or_world_readable_vault_is_refused_for_its_owner(nobody_home: Path) -> None:
    (nobody_home / "vault.sp").chmod(0o644)
    code, _, err = _list_as_nobody(nobody_home)
    assert code == 2 and "has mode 0644, not 0600" in err and len(err.splitlines()) == 1


def test_a_vault_owned_by_someone_else_is_refused_even_when_readable(nobody_home: Path) -> None:
    vault_file = nobody_home / "vault.sp"
    os.chown(vault_file, 0, 0)
    vault_file.chmod(0o600)
    code, _, err = _list_as_nobody(nobody_home)
    assert code == 2 and "cannot read vault file" in err  # the kernel says no first
    vault_file.chmod(0o644)
    code, _, err = _list_as_nobody(nobody_home)
    assert code == 2 and "is owned by another user" in err


def test_a_vault_symlink_planted_by_the_owner_is_refused(nobody_home: Path) -> None:
    vault_file = nobody_home / "vault.sp"
    real = nobody_home / "real.sp"
    vault_file.rename(real)
    vault_file.symlink_to(real)
    os.chown(vault_file, NOBODY, NOBODY, follow_symlinks=False)
    code, _, err = _list_as_nobody(nobody_home)
    assert code == 2 and "is a symbolic link" in err
