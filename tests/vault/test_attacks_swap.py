"""vault.sp swapped for a link to another vault of the owner's while an unlock reads it.

An attacker who can rename files as the owner flips the name between the real file and a
symbolic or hard link to a decoy vault with the same passphrase. Every unlock must open the real
vault or refuse; it never opens the decoy. A racing thread would reach each interleaving only
by luck, so the swap is made at each step of the read itself: the test wraps the os calls the
read makes and swaps the name just before or after the one named, so every interleaving that
matters runs on every run, whatever the machine's load.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from safeport.vault import UnsafeVaultFile, VaultFile
from safeport.vault.secrets import SecretBytes
from tests.vault.vault_factory import CANARY_TOKEN, make_vault, passphrase, token_value

# The steps of one read, in order: the name is resolved at "the file's open" only, so a swap up
# to then decides what is opened; after it the descriptor holds what was opened.
BEFORE_FOLDER_OPEN = "before the folder is opened"
BEFORE_FILE_OPEN = "between the folder's check and the file's open"
AFTER_FILE_OPEN = "between the file's open and its fstat"
BEFORE_READ = "between the fstat and the read"
BEFORE_CLOSE = "between the read and the close"
STEPS = (BEFORE_FOLDER_OPEN, BEFORE_FILE_OPEN, AFTER_FILE_OPEN, BEFORE_READ, BEFORE_CLOSE)


@dataclass
class Scene:
    store: VaultFile
    decoy_path: Path
    real: bytes

    def put(self, what: str) -> None:
        """Rename something new over vault.sp, as the attacker does (never an edit in place)."""
        temp = self.store.path.with_name("flip")
        if what == "real":
            temp.write_bytes(self.real)  # a fresh single-link copy of the real vault
            temp.chmod(0o600)
        elif what == "symlink":
            temp.symlink_to(self.decoy_path)
        else:
            os.link(self.decoy_path, temp)
        os.replace(temp, self.store.path)


@pytest.fixture
def scene(tmp_path: Path) -> Scene:
    (tmp_path / "a").mkdir(mode=0o700)
    (tmp_path / "b").mkdir(mode=0o700)
    store, vault = make_vault(tmp_path / "a")
    vault.lock()
    decoy_store, decoy = make_vault(tmp_path / "b")
    decoy.rotate("deploy-token", {"token": SecretBytes(b"DECOY")})
    decoy.lock()
    return Scene(store, decoy_store.path, store.path.read_bytes())


def swap_at(
    monkeypatch: pytest.MonkeyPatch, scene: Scene, step: str, to: str
) -> Callable[[], bool]:
    """Make the swap to ``to`` once, at ``step`` of the next read of vault.sp; the returned
    call tells whether it was made (so a changed read cannot leave the test checking nothing)."""
    real_open, real_read, real_close = os.open, os.read, os.close
    folder = scene.store.path.parent
    state: dict[str, Any] = {"fd": None, "done": False}

    def swap_if(here: str) -> None:
        if here == step and not state["done"]:
            state["done"] = True
            scene.put(to)

    def opening(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        if dir_fd is None and isinstance(path, Path) and path == folder:
            swap_if(BEFORE_FOLDER_OPEN)
        is_vault = dir_fd is not None and path == scene.store.path.name
        if is_vault:
            swap_if(BEFORE_FILE_OPEN)
        fd = real_open(path, flags, mode, dir_fd=dir_fd)
        if is_vault:
            state["fd"] = fd
            swap_if(AFTER_FILE_OPEN)
        return fd

    def reading(fd: int, size: int) -> bytes:
        if fd == state["fd"]:
            swap_if(BEFORE_READ)
        return real_read(fd, size)

    def closing(fd: int) -> None:
        if fd == state["fd"]:
            state["fd"] = None
            swap_if(BEFORE_CLOSE)
        real_close(fd)

    monkeypatch.setattr(os, "open", opening)
    monkeypatch.setattr(os, "read", reading)
    monkeypatch.setattr(os, "close", closing)
    return lambda: bool(state["done"])


def expected(start: str, to: str, step: str) -> str:
    """What one unlock must end in (pure): a link found by the open is refused; the real file
    found by it is opened, unless the name was renamed over before its fstat (it then has no
    link left and is refused too)."""
    at_open = to if step in (BEFORE_FOLDER_OPEN, BEFORE_FILE_OPEN) else start
    if at_open != "real" or step == AFTER_FILE_OPEN:
        return "refused"
    return "opened"


# The real file replaced by a link at every step; a link replaced by the real file at every
# step the read still reaches (once it has refused the link, there is no later step). A hard
# link opened and then renamed over has its one link back by the fstat: that reads a copy of
# the owner's other vault, which an attacker who can rename files as the owner could have
# copied over vault.sp anyway, so it is no way past the guard and is not listed here.
CASES = [
    *(("real", link, step) for link in ("symlink", "hardlink") for step in STEPS),
    *((link, "real", step) for link in ("symlink", "hardlink") for step in STEPS[:2]),
]


@pytest.mark.parametrize(("start", "to", "step"), CASES)
def test_a_link_swapped_in_or_out_at_any_step_of_an_unlock_never_opens_the_other_vault(
    scene: Scene, monkeypatch: pytest.MonkeyPatch, start: str, to: str, step: str
) -> None:
    """Each step, each direction, each kind of link: the unlock opens the real vault or
    refuses, exactly as the step decides, and never reads the decoy."""
    scene.put(start)
    swapped = swap_at(monkeypatch, scene, step, to)
    outcome = "opened"
    try:
        opened = scene.store.unlock(passphrase())
    except UnsafeVaultFile:
        outcome = "refused"
    else:
        try:
            assert token_value(opened, "deploy-token") == CANARY_TOKEN  # never b"DECOY"
        finally:
            opened.lock()
    monkeypatch.undo()
    assert swapped(), f"the read never reached {step!r}"
    assert outcome == expected(start, to, step)


def test_with_nobody_swapping_the_real_vault_opens(scene: Scene) -> None:
    opened = scene.store.unlock(passphrase())
    try:
        assert token_value(opened, "deploy-token") == CANARY_TOKEN
    finally:
        opened.lock()
