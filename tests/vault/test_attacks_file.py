"""Attacks on vault.sp by someone who can write files as the owner but lacks the passphrase.

Every tampered header, length, nonce or tail must be the one "cannot unlock" error (never a
foreign exception, never a hang, never a KDF beyond the caps); swapped file types must be
refused without blocking; saves must not be steerable through planted temp or lock files.
"""

from __future__ import annotations

import base64
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.kdf.argon2 import Argon2id

from safeport.errors import EnvironmentProblem
from safeport.vault import (
    CannotUnlock,
    EntryError,
    KdfParams,
    NotAVault,
    UnsafeVaultFile,
    VaultFile,
    read_public_keys,
)
from safeport.vault import kdf as kdf_module
from safeport.vault import store as store_module
from safeport.vault.format import MAX_HEADER_BYTES
from safeport.vault.kdf import MAX_ITERATIONS, MAX_LANES, MAX_MEMORY_KIB
from safeport.vault.secrets import SecretBytes, TokenSecret
from tests.conftest import need
from tests.vault.tamper import rewrite_header, split, write_raw_header
from tests.vault.vault_factory import CANARY_TOKEN, FAST_KDF, MemoryKeyring, make_vault, passphrase

Header = dict[str, Any]


@pytest.fixture
def kdf_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[dict[str, int]]]:
    """Every Argon2id the vault constructs, with its costs (the real one still runs)."""
    calls: list[dict[str, int]] = []
    real = Argon2id

    def recording(**options: Any) -> Any:
        calls.append({k: v for k, v in options.items() if k != "salt"})
        return real(**options)

    monkeypatch.setattr(kdf_module, "Argon2id", recording)
    yield calls


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _set(*path: str, value: object) -> Callable[[Header], None]:
    def change(header: Header) -> None:
        target = header
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


TAMPERS: dict[str, Callable[[Header], object]] = {
    "vault id not ascii": _set("vault_id", value="é" * 32),
    "vault id another vault's": _set("vault_id", value="0" * 32),
    "vault id a number": _set("vault_id", value=7),
    "salt empty": _set("kdf", "salt", value=""),
    "salt too short for argon2": _set("kdf", "salt", value=_b64(b"1234567")),
    "salt longer": _set("kdf", "salt", value=_b64(b"s" * 64)),
    "salt not base64": _set("kdf", "salt", value="!!!!"),
    "memory absurdly high": _set("kdf", "memory_kib", value=2**40),
    "memory just over the cap": _set("kdf", "memory_kib", value=MAX_MEMORY_KIB + 1),
    "memory zero": _set("kdf", "memory_kib", value=0),
    "memory negative": _set("kdf", "memory_kib", value=-1),
    "memory as bool": _set("kdf", "memory_kib", value=True),
    "memory as float": _set("kdf", "memory_kib", value=64.0),
    "iterations absurdly high": _set("kdf", "iterations", value=10**9),
    "iterations zero": _set("kdf", "iterations", value=0),
    "lanes absurdly high": _set("kdf", "lanes", value=2**24),
    "lanes zero": _set("kdf", "lanes", value=0),
    "weakest legal costs": _set("kdf", value={**{"alg": "argon2id", "salt": _b64(b"s" * 16)}}),
    "other algorithm": _set("kdf", "alg", value="pbkdf2"),
    "wrap nonce short": _set("wrap", "nonce", value=_b64(b"n" * 8)),
    "wrap key truncated": _set("wrap", "key", value=_b64(b"k" * 40)),
    "wrap missing": lambda h: h.pop("wrap"),
    "keyring wrap planted": lambda h: h.__setitem__("keyring", dict(h["wrap"])),
    "keyring wrap garbage": _set("keyring", value={"nonce": "", "key": ""}),
    "keyring wrap a list": _set("keyring", value=[]),
    "audit key short": _set("public", "audit_x25519", value=_b64(b"a" * 31)),
    "checkpoint key short": _set("public", "checkpoint_ed25519", value=""),
    "audit key swapped": _set("public", "audit_x25519", value=_b64(b"a" * 32)),
    "payload nonce long": _set("payload_nonce", value=_b64(b"n" * 16)),
    "generation changed": lambda h: h.__setitem__("generation", h["generation"] + 1),
    "generation huge": _set("generation", value=10**300),
    "entries count changed": _set("entries", value=99),
    "unknown member added": _set("extra", value="x"),
    "header a list": lambda h: h.clear(),
}


def _weakest(header: Header) -> None:
    header["kdf"] = {
        "alg": "argon2id",
        "salt": header["kdf"]["salt"],
        "memory_kib": 8,
        "iterations": 1,
        "lanes": 1,
    }


TAMPERS["weakest legal costs"] = _weakest


@pytest.mark.parametrize("name", sorted(TAMPERS))
def test_a_tampered_header_field_is_the_same_refusal_as_a_wrong_passphrase(
    tmp_path: Path, name: str, kdf_calls: list[dict[str, int]]
) -> None:
    store, vault = make_vault(tmp_path)
    vault.lock()
    rewrite_header(store.path, TAMPERS[name])
    tampered = store.path.read_bytes()
    kdf_calls.clear()
    started = time.monotonic()
    with pytest.raises(CannotUnlock):
        store.unlock(passphrase())
    # No KDF outside the caps ran (below); the bound only catches one that ran for minutes.
    assert time.monotonic() - started < 30
    for costs in kdf_calls:  # any KDF that did run stayed inside the caps
        assert costs["memory_cost"] <= MAX_MEMORY_KIB and costs["iterations"] <= MAX_ITERATIONS
        assert costs["lanes"] <= MAX_LANES
    assert store.path.read_bytes() == tampered


def test_a_header_that_is_not_an_object_or_is_nested_deeply_is_refused(tmp_path: Path) -> None:
    store, vault = make_vault(tmp_path)
    vault.lock()
    _, ciphertext = split(store.path)
    depth = (MAX_HEADER_BYTES - 2) // 2
    for body in (b"[]", b"null", b'"x"', b"[" * depth + b"]" * depth, b"\xff\xfe", b""):
        write_raw_header(store.path, body, ciphertext)
        with pytest.raises(CannotUnlock):
            store.unlock(passphrase())


def test_header_lengths_past_the_limit_or_the_end_are_refused(tmp_path: Path) -> None:
    store, vault = make_vault(tmp_path)
    vault.lock()
    original = store.path.read_bytes()
    for length in (MAX_HEADER_BYTES + 1, 2**32 - 1, len(original)):
        data = bytearray(original)
        data[10:14] = length.to_bytes(4, "big")
        store.path.write_bytes(bytes(data))
        with pytest.raises(CannotUnlock):
            store.unlock(passphrase())


def test_appended_or_prepended_bytes_are_refused(tmp_path: Path) -> None:
    store, vault = make_vault(tmp_path)
    vault.lock()
    original = store.path.read_bytes()
    store.path.write_bytes(original + b"\x00")
    with pytest.raises(CannotUnlock):
        store.unlock(passphrase())
    store.path.write_bytes(original + original)
    with pytest.raises(CannotUnlock):
        store.unlock(passphrase())
    store.path.write_bytes(b"\x00" + original)
    with pytest.raises(NotAVault):
        store.unlock(passphrase())
    store.path.write_bytes(original)
    assert len(store.unlock(passphrase()).entries()) == 2


def test_an_older_payload_nonce_replayed_into_the_header_is_refused(tmp_path: Path) -> None:
    store, vault = make_vault(tmp_path)
    before, _ = split(store.path)
    vault.rotate("deploy-token", {"token": SecretBytes(b"rotated")})
    vault.lock()
    rewrite_header(store.path, _set("payload_nonce", value=before["payload_nonce"]))
    with pytest.raises(CannotUnlock):
        store.unlock(passphrase())


def test_every_save_uses_a_fresh_payload_nonce(tmp_path: Path) -> None:
    store, vault = make_vault(tmp_path)
    nonces = {split(store.path)[0]["payload_nonce"]}
    for index in range(20):
        vault.add(f"entry-{index}", "token", {"token": SecretBytes(b"value")})
        nonces.add(split(store.path)[0]["payload_nonce"])
    assert len(nonces) == 21


def test_saves_keep_the_recorded_kdf_costs_and_cannot_be_talked_down(tmp_path: Path) -> None:
    store, vault = make_vault(tmp_path)
    vault.add("more", "token", {"token": SecretBytes(b"x")})
    vault.change_passphrase(passphrase(), passphrase(b"another one"))
    kdf = split(store.path)[0]["kdf"]
    assert (kdf["memory_kib"], kdf["iterations"], kdf["lanes"]) == (
        FAST_KDF.memory_kib,
        FAST_KDF.iterations,
        FAST_KDF.lanes,
    )
    with pytest.raises(ValueError, match="out of range"):
        KdfParams(memory_kib=MAX_MEMORY_KIB * 2, iterations=1, lanes=1)


def _refused_without_hanging(action: Callable[[], object]) -> BaseException:
    outcome: list[BaseException] = []

    def run() -> None:
        try:
            action()
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(60)  # a blocked open never returns; a slow machine still does, well within this
    assert not worker.is_alive(), "the read blocked"
    assert outcome, "the planted file was accepted"
    return outcome[0]


def test_a_fifo_planted_as_the_vault_is_refused_without_blocking(tmp_path: Path) -> None:
    store, vault = make_vault(tmp_path)
    vault.lock()
    store.path.unlink()
    os.mkfifo(store.path, 0o600)
    error = _refused_without_hanging(lambda: store.unlock(passphrase()))
    assert isinstance(error, UnsafeVaultFile) and "not a regular file" in str(error)
    assert "chmod" not in error.diagnostic()  # no mode fixes a FIFO
    error = _refused_without_hanging(store.header)
    assert isinstance(error, UnsafeVaultFile)


def test_a_fifo_planted_as_the_public_key_file_is_refused_without_blocking(
    tmp_path: Path,
) -> None:
    store, vault = make_vault(tmp_path)
    store.public_path.unlink()
    os.mkfifo(store.public_path, 0o644)
    error = _refused_without_hanging(lambda: read_public_keys(store.public_path))
    assert isinstance(error, UnsafeVaultFile)
    assert vault.public_file_state() == "mismatch"
    vault.rewrite_public_file()  # the remedy replaces the FIFO with the real keys
    assert read_public_keys(store.public_path) == vault.public_keys()


def test_a_device_planted_as_the_vault_is_refused(tmp_path: Path) -> None:
    need(os.geteuid() == 0, "creating a device node needs root")
    store, vault = make_vault(tmp_path)
    vault.lock()
    store.path.unlink()
    os.mknod(store.path, stat.S_IFCHR | 0o600, os.makedev(1, 5))  # /dev/zero's numbers
    error = _refused_without_hanging(lambda: store.unlock(passphrase()))
    assert isinstance(error, UnsafeVaultFile) and "not a regular file" in str(error)


def test_a_folder_writable_by_others_is_refused_and_a_private_one_is_fine(
    tmp_path: Path,
) -> None:
    store, vault = make_vault(tmp_path)
    vault.lock()
    for mode in (0o777, 0o770, 0o1777):
        tmp_path.chmod(mode)
        with pytest.raises(UnsafeVaultFile, match="writable by other users"):
            store.unlock(passphrase())
        with pytest.raises(UnsafeVaultFile, match="writable by other users"):
            read_public_keys(store.public_path)
    for mode in (0o700, 0o755):
        tmp_path.chmod(mode)
        store.unlock(passphrase()).lock()
    tmp_path.chmod(0o700)


def test_a_planted_symlink_at_the_temp_name_never_redirects_a_save(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, vault = make_vault(tmp_path)
    victim = tmp_path / "victim"
    victim.write_bytes(b"untouched")
    monkeypatch.setattr("safeport.vault.files.secrets.token_hex", lambda _n: "guessed")
    temp = store.path.with_name(".vault.sp.tmp-guessed")
    temp.symlink_to(victim)
    vault.add("one", "token", {"token": SecretBytes(b"x")})  # stale-temp cleanup drops the link
    assert victim.read_bytes() == b"untouched" and not temp.is_symlink()
    # The attacker replants it after the cleanup: O_EXCL|O_NOFOLLOW refuses, nothing is saved.
    before = store.path.read_bytes()
    monkeypatch.setattr(store_module, "remove_stale_temps", lambda _p: None)
    temp.symlink_to(victim)
    with pytest.raises(EnvironmentProblem, match="cannot write beside"):
        vault.add("two", "token", {"token": SecretBytes(b"y")})
    assert victim.read_bytes() == b"untouched" and store.path.read_bytes() == before
    assert "two" not in [e.name for e in vault.entries()]


def test_a_planted_lock_file_symlink_or_fifo_is_refused(tmp_path: Path) -> None:
    store, vault = make_vault(tmp_path)
    lock = store.path.with_name(".vault.sp.lock")
    lock.unlink()
    lock.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UnsafeVaultFile, match="symbolic link"):
        vault.add("x", "token", {"token": SecretBytes(b"x")})
    assert not (tmp_path / "elsewhere").exists()
    lock.unlink()
    os.mkfifo(lock, 0o600)
    error = _refused_without_hanging(lambda: vault.add("x", "token", {"token": SecretBytes(b"x")}))
    assert isinstance(error, UnsafeVaultFile) and "not a regular file" in str(error)


def test_a_save_that_would_outgrow_what_unlock_reads_is_refused(tmp_path: Path) -> None:
    store, _ = make_vault(tmp_path)
    before = store.path.read_bytes()
    limit = len(before) + 200
    small = VaultFile(store.path, keyring=MemoryKeyring(), max_bytes=limit)
    vault = small.unlock(passphrase())
    with pytest.raises(EntryError, match="grow past"):
        vault.add("big", "token", {"token": SecretBytes(b"v" * 400)})
    assert store.path.read_bytes() == before
    assert "big" not in [e.name for e in vault.entries()]
    vault.add("small", "token", {"token": SecretBytes(b"v")})  # what fits is still saved
    # The same limit on reading: a file over it is refused before it is parsed.
    smaller = VaultFile(store.path, keyring=MemoryKeyring(), max_bytes=len(before) - 1)
    with pytest.raises(UnsafeVaultFile, match="larger than any vault can be"):
        smaller.header()


def test_a_rolled_back_copy_opens_with_its_old_values_and_a_lower_generation(
    tmp_path: Path,
) -> None:
    """Documented limit: the file alone cannot tell an old copy of itself from the current one.
    What it offers a holder is the authenticated generation, which goes backwards."""
    store, vault = make_vault(tmp_path)
    old_copy = store.path.read_bytes()
    old_generation = vault.generation
    vault.rotate("deploy-token", {"token": SecretBytes(b"rotated-after-leak")})
    current_generation = vault.generation
    vault.lock()
    store.path.write_bytes(old_copy)
    rolled_back = store.unlock(passphrase())
    value = rolled_back.secret("deploy-token")
    assert isinstance(value, TokenSecret) and value.token.reveal() == CANARY_TOKEN
    assert rolled_back.generation == old_generation < current_generation


def test_a_rolled_back_copy_from_before_a_passphrase_change_needs_the_old_passphrase(
    tmp_path: Path,
) -> None:
    store, vault = make_vault(tmp_path)
    old_copy = store.path.read_bytes()
    vault.change_passphrase(passphrase(), passphrase(b"new passphrase"))
    vault.lock()
    store.path.write_bytes(old_copy)
    with pytest.raises(CannotUnlock):
        store.unlock(passphrase(b"new passphrase"))


def test_the_hard_link_rollback_is_refused(tmp_path: Path) -> None:
    """An old copy kept as a hard link (so the owner's save cannot unlink it) is refused."""
    store, vault = make_vault(tmp_path)
    vault.lock()
    os.link(store.path, tmp_path / "kept")
    with pytest.raises(UnsafeVaultFile, match="hard links"):
        VaultFile(store.path).unlock(passphrase())


def test_the_clear_header_is_unauthenticated_until_an_unlock_checks_it(tmp_path: Path) -> None:
    """`sp vault status` reads the clear header, so it can be lied to; unlock cannot."""
    store, vault = make_vault(tmp_path)
    vault.lock()
    rewrite_header(store.path, _set("entries", value=12345))
    assert store.header().entries == 12345  # unauthenticated, as documented
    with pytest.raises(CannotUnlock):
        store.unlock(passphrase())


def test_keyring_unlock_of_a_substituted_vault_is_caught_by_the_passphrase_proof(
    tmp_path: Path,
) -> None:
    """Documented limit: the keyring item is found through the header's vault id, so a same-user
    attacker who substitutes their own vault and plants its keyring item gets it opened with
    --keyring. The owner's passphrase then fails against it, so no approval can pass."""
    ring = MemoryKeyring()
    (tmp_path / "mine").mkdir(mode=0o700)
    (tmp_path / "theirs").mkdir(mode=0o700)
    store, vault = make_vault(tmp_path / "mine", keyring=ring)
    vault.enable_keyring()
    vault.lock()
    attacker_store = VaultFile(tmp_path / "theirs" / "vault.sp", keyring=ring)
    attacker = attacker_store.create(passphrase(b"attacker's own"), kdf=FAST_KDF)
    attacker.enable_keyring()  # the same user can write Secret Service items
    attacker.lock()
    store.path.write_bytes(attacker_store.path.read_bytes())
    opened = store.unlock_with_keyring()
    assert opened.entries() == []  # the attacker's vault, not the owner's
    with pytest.raises(CannotUnlock):
        opened.verify_passphrase(passphrase())
    with pytest.raises(CannotUnlock):
        store.unlock(passphrase())
