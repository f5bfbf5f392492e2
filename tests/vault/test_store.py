"""The vault file through the library: round trips, every bad input, locking, generations."""

from __future__ import annotations

import hashlib
import os
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from safeport.errors import ConfigError, EnvironmentProblem, Error, UsageError
from safeport.vault import (
    CannotUnlock,
    EntryError,
    KeyringProblem,
    NotAVault,
    UnsafeVaultFile,
    VaultChanged,
    VaultFile,
    VaultLocked,
    VaultMissing,
)
from safeport.vault import kdf as kdf_module
from safeport.vault.format import PREFIX_BYTES
from safeport.vault.secrets import BasicSecret, SecretBytes, SecretKind, SshKeySecret, TokenSecret
from tests.conftest import need
from tests.vault.vault_factory import (
    CANARY_PASSWORD,
    CANARY_TOKEN,
    FAST_KDF,
    MemoryKeyring,
    make_vault,
    passphrase,
    token_value,
)


def test_a_vault_round_trips_its_entries_and_values(tmp_path: Path) -> None:
    store, vault = make_vault(tmp_path)
    vault.lock()
    reopened = store.unlock(passphrase())
    assert [e.name for e in reopened.entries()] == ["deploy-token", "registry"]
    token = reopened.secret("deploy-token")
    assert isinstance(token, TokenSecret) and token.token.reveal() == CANARY_TOKEN
    basic = reopened.secret("registry")
    assert isinstance(basic, BasicSecret)
    assert (basic.username, basic.password.reveal()) == ("ci", CANARY_PASSWORD)
    assert store.header().entries == 2


def test_the_vault_file_is_0600_and_the_public_file_0644(tmp_path: Path) -> None:
    store, _ = make_vault(tmp_path)
    assert (store.path.stat().st_mode & 0o777) == 0o600
    assert (store.public_path.stat().st_mode & 0o777) == 0o644


def test_nothing_that_holds_a_secret_shows_it_in_repr_or_str(tmp_path: Path) -> None:
    store, vault = make_vault(tmp_path)
    shown = " ".join(
        repr(x) + str(x)
        for x in (vault, store, vault.secret("deploy-token"), vault.secret("registry"))
    )
    token = vault.secret("deploy-token")
    assert isinstance(token, TokenSecret)
    shown += repr(vault.entries()) + repr(token.token)
    assert CANARY_TOKEN.decode() not in shown and CANARY_PASSWORD.decode() not in shown


def test_a_wrong_passphrase_is_refused(tmp_path: Path) -> None:
    store, _ = make_vault(tmp_path)
    with pytest.raises(CannotUnlock) as caught:
        store.unlock(passphrase(b"wrong horse"))
    assert caught.value.exit_code == 1


def test_every_flipped_byte_fails_and_only_magic_or_version_say_not_a_vault(
    tmp_path: Path,
) -> None:
    store, _ = make_vault(tmp_path)
    original = store.path.read_bytes()
    for index in range(len(original)):
        damaged = bytearray(original)
        damaged[index] ^= 0x01
        store.path.write_bytes(bytes(damaged))
        expected = NotAVault if index < 10 else CannotUnlock
        with pytest.raises(expected):
            store.unlock(passphrase())
    store.path.write_bytes(original)
    store.unlock(passphrase()).lock()


def test_every_truncation_fails_without_returning_anything(tmp_path: Path) -> None:
    store, _ = make_vault(tmp_path)
    original = store.path.read_bytes()
    for length in range(len(original)):
        store.path.write_bytes(original[:length])
        with pytest.raises((NotAVault, CannotUnlock)):
            store.unlock(passphrase())


def test_an_unknown_version_says_so_before_any_passphrase_work(tmp_path: Path) -> None:
    store, _ = make_vault(tmp_path)
    data = bytearray(store.path.read_bytes())
    data[9] = 7
    store.path.write_bytes(bytes(data))
    with pytest.raises(NotAVault, match="version 7"):
        store.unlock(passphrase())


def test_a_symlinked_vault_is_refused_even_when_it_points_at_a_real_vault(
    tmp_path: Path,
) -> None:
    (tmp_path / "real").mkdir(mode=0o700)
    store, _ = make_vault(tmp_path / "real")
    link = tmp_path / "vault.sp"
    link.symlink_to(store.path)
    with pytest.raises(UnsafeVaultFile, match="symbolic link"):
        VaultFile(link).unlock(passphrase())


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o644, 0o660])
def test_a_vault_readable_by_others_is_refused(tmp_path: Path, mode: int) -> None:
    store, _ = make_vault(tmp_path)
    store.path.chmod(mode)
    with pytest.raises(UnsafeVaultFile, match=f"mode {mode:04o}"):
        store.unlock(passphrase())


def test_a_vault_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    need(os.geteuid() == 0, "giving a file to another user needs root")
    store, _ = make_vault(tmp_path)
    os.chown(store.path, 65534, 65534)
    with pytest.raises(UnsafeVaultFile, match="owned by another user"):
        store.unlock(passphrase())


def test_a_hard_linked_vault_is_refused(tmp_path: Path) -> None:
    store, _ = make_vault(tmp_path)
    os.link(store.path, tmp_path / "copy.sp")
    with pytest.raises(UnsafeVaultFile, match="hard links"):
        store.unlock(passphrase())


def test_a_missing_vault_says_to_init(tmp_path: Path) -> None:
    with pytest.raises(VaultMissing) as caught:
        VaultFile(tmp_path / "vault.sp").unlock(passphrase())
    assert "sp vault init" in caught.value.diagnostic()


def test_an_empty_passphrase_is_refused_at_create_unlock_and_change(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="empty"):
        VaultFile(tmp_path / "a.sp").create(SecretBytes(b""), kdf=FAST_KDF)
    assert not (tmp_path / "a.sp").exists()
    store, vault = make_vault(tmp_path)
    before = store.path.read_bytes()
    with pytest.raises(UsageError, match="empty"):
        store.unlock(SecretBytes(b""))
    with pytest.raises(UsageError, match="empty"):
        vault.change_passphrase(passphrase(), SecretBytes(b""))
    assert store.path.read_bytes() == before


def test_create_never_replaces_an_existing_vault(tmp_path: Path) -> None:
    store, _ = make_vault(tmp_path)
    before = store.path.read_bytes()
    with pytest.raises(EnvironmentProblem, match="already exists"):
        store.create(passphrase(b"other"), kdf=FAST_KDF)
    assert store.path.read_bytes() == before


def _ed25519_key(tmp_path: Path, key_passphrase: str = "") -> bytes:
    key = tmp_path / f"id_{len(key_passphrase)}"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", key_passphrase, "-f", str(key)], check=True
    )
    return key.read_bytes()


@pytest.mark.parametrize(
    ("kind", "value", "message"),
    [
        ("token", {"token": b""}, "empty"),
        ("token", {"token": CANARY_TOKEN + b"\n"}, "control character"),
        ("token", {"token": b"abc\r\nX-Injected: 1"}, "control character"),
        ("token", {"password": b"x"}, "takes the fields token"),
        ("basic", {"password": b"x"}, "takes the fields"),
        ("ssh-key", {"private_key": b"-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n"}, "not a valid"),
        ("ssh-key", {"private_key": CANARY_TOKEN}, "not a valid private key"),
    ],
)
def test_malformed_values_are_refused_and_the_file_is_unchanged(
    tmp_path: Path, kind: SecretKind, value: dict[str, bytes], message: str
) -> None:
    store, vault = make_vault(tmp_path)
    before = store.path.read_bytes()
    with pytest.raises(EntryError, match=message) as caught:
        vault.add("new-one", kind, {k: SecretBytes(v) for k, v in value.items()})
    assert CANARY_TOKEN.decode() not in str(caught.value) + caught.value.diagnostic()
    assert store.path.read_bytes() == before
    assert "new-one" not in [e.name for e in vault.entries()]


def test_ssh_keys_are_checked_with_their_own_passphrase(tmp_path: Path) -> None:
    store, vault = make_vault(tmp_path)
    plain_key = _ed25519_key(tmp_path)
    locked_key = _ed25519_key(tmp_path, "key-pass")
    vault.add("plain", "ssh-key", {"private_key": SecretBytes(plain_key)})
    with pytest.raises(EntryError, match="encrypted; give its passphrase"):
        vault.add("locked", "ssh-key", {"private_key": SecretBytes(locked_key)})
    with pytest.raises(EntryError, match="passphrase is wrong"):
        vault.add(
            "locked",
            "ssh-key",
            {"private_key": SecretBytes(locked_key), "passphrase": SecretBytes(b"nope")},
        )
    vault.add(
        "locked",
        "ssh-key",
        {"private_key": SecretBytes(locked_key), "passphrase": SecretBytes(b"key-pass")},
    )
    vault.lock()
    secret = store.unlock(passphrase()).secret("locked")
    assert isinstance(secret, SshKeySecret)
    assert secret.private_key.reveal() == locked_key
    assert secret.passphrase is not None and secret.passphrase.reveal() == b"key-pass"


def test_duplicate_unknown_and_bad_names_are_refused(tmp_path: Path) -> None:
    store, vault = make_vault(tmp_path)
    before = store.path.read_bytes()
    with pytest.raises(EntryError, match="already exists"):
        vault.add("deploy-token", "token", {"token": SecretBytes(b"other")})
    with pytest.raises(EntryError, match="no entry named"):
        vault.remove("ghost")
    with pytest.raises(EntryError, match="no entry named"):
        vault.rotate("ghost", {"token": SecretBytes(b"x")})
    with pytest.raises(EntryError, match="entry name"):
        vault.add("../etc", "token", {"token": SecretBytes(b"x")})
    assert store.path.read_bytes() == before
    assert token_value(vault, "deploy-token") == CANARY_TOKEN


def test_rotate_and_remove_persist(tmp_path: Path) -> None:
    store, vault = make_vault(tmp_path)
    vault.rotate("deploy-token", {"token": SecretBytes(b"new-token")})
    vault.remove("registry")
    vault.lock()
    reopened = store.unlock(passphrase())
    (entry,) = reopened.entries()
    assert entry.name == "deploy-token" and entry.rotated is not None
    assert token_value(reopened, "deploy-token") == b"new-token"


def test_lock_zeroes_the_buffers_and_refuses_every_later_call(tmp_path: Path) -> None:
    _, vault = make_vault(tmp_path)
    handed_out = vault.secret("deploy-token")
    held = vault._payload.entries["deploy-token"].secrets["token"]
    data_key = vault._data_key
    vault.lock()
    assert len(held) == 0 and data_key == bytearray(len(data_key))
    for call in (
        vault.entries,
        lambda: vault.secret("deploy-token"),
        vault.accepted_policy,
        vault.checkpoint_signer,
        lambda: vault.add("x", "token", {"token": SecretBytes(b"y")}),
    ):
        with pytest.raises(VaultLocked):
            call()
    # The executor's copy is its own to wipe; locking does not reach into it.
    assert isinstance(handed_out, TokenSecret) and handed_out.token.reveal() == CANARY_TOKEN


def test_verify_passphrase_uses_the_same_error_for_every_wrong_answer(tmp_path: Path) -> None:
    _, vault = make_vault(tmp_path)
    vault.verify_passphrase(passphrase())
    for wrong in (b"wrong", b"", b"correct horse battery stapl"):
        with pytest.raises(CannotUnlock):
            vault.verify_passphrase(SecretBytes(wrong))


def test_changing_the_passphrase_rotates_the_data_key_and_drops_the_keyring_wrap(
    tmp_path: Path,
) -> None:
    ring = MemoryKeyring()
    store, vault = make_vault(tmp_path, keyring=ring)
    vault.enable_keyring()
    old_wrap = store.header().passphrase_wrap
    with pytest.raises(CannotUnlock):
        vault.change_passphrase(passphrase(b"not it"), passphrase(b"new passphrase"))
    vault.change_passphrase(passphrase(), passphrase(b"new passphrase"))
    assert store.header().passphrase_wrap != old_wrap
    assert store.header().keyring_wrap is None and ring.items == {}
    with pytest.raises(CannotUnlock):
        store.unlock(passphrase())
    reopened = store.unlock(passphrase(b"new passphrase"))
    assert len(reopened.entries()) == 2


def test_keyring_unlock_round_trip_and_its_failures(tmp_path: Path) -> None:
    ring = MemoryKeyring()
    store, vault = make_vault(tmp_path, keyring=ring)
    with pytest.raises(EnvironmentProblem, match="not enabled"):
        store.unlock_with_keyring()
    vault.enable_keyring()
    assert token_value(store.unlock_with_keyring(), "deploy-token") == CANARY_TOKEN
    # The keyring holds a random wrapping key, not the passphrase and not a value.
    (stored,) = ring.items.values()
    assert CANARY_TOKEN.decode() not in stored and "correct horse" not in stored
    ring.items[vault.vault_id] = "AAAA" + stored[4:]
    with pytest.raises(CannotUnlock):
        store.unlock_with_keyring()
    ring.items.clear()
    with pytest.raises(EnvironmentProblem, match="holds no key"):
        store.unlock_with_keyring()
    vault.disable_keyring()
    assert store.header().keyring_wrap is None


def test_a_save_over_a_file_changed_since_unlock_is_refused(tmp_path: Path) -> None:
    store, first = make_vault(tmp_path)
    second = store.unlock(passphrase())
    second.add("from-second", "token", {"token": SecretBytes(b"x")})
    after_second = store.path.read_bytes()
    with pytest.raises(VaultChanged):
        first.add("from-first", "token", {"token": SecretBytes(b"y")})
    assert store.path.read_bytes() == after_second


def test_the_accepted_policy_is_stored_with_its_digest(tmp_path: Path) -> None:
    store, vault = make_vault(tmp_path)
    text = "[gateway]\napproval_timeout_s = 60\n"
    accepted = vault.accept_policy(text)
    vault.lock()
    stored = store.unlock(passphrase()).accepted_policy()
    assert stored == accepted and stored is not None and stored.text == text
    assert stored.digest == hashlib.sha256(text.encode()).hexdigest()


def test_a_policy_that_does_not_parse_is_not_accepted(tmp_path: Path) -> None:
    store, vault = make_vault(tmp_path)
    before = store.path.read_bytes()
    with pytest.raises(ConfigError, match="unknown key"):
        vault.accept_policy("[gateway]\nno_such_key = 1\n")
    assert store.path.read_bytes() == before and vault.accepted_policy() is None


def test_backup_is_a_byte_copy_that_opens_with_the_same_passphrase(tmp_path: Path) -> None:
    store, _ = make_vault(tmp_path)
    copy = tmp_path / "backup.sp"
    store.backup(copy)
    assert copy.read_bytes() == store.path.read_bytes()
    assert (copy.stat().st_mode & 0o777) == 0o600
    assert len(VaultFile(copy).unlock(passphrase()).entries()) == 2
    with pytest.raises(EnvironmentProblem, match="already exists"):
        store.backup(copy)


def test_only_one_kdf_runs_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    running = 0
    peak = 0
    guard = threading.Lock()

    class CountingArgon2id:
        def __init__(self, **_: object) -> None:
            pass

        def derive_into(self, _material: bytes, out: bytearray) -> int:
            nonlocal running, peak
            with guard:
                running += 1
                peak = max(peak, running)
            time.sleep(0.02)
            with guard:
                running -= 1
            return len(out)

    monkeypatch.setattr(kdf_module, "Argon2id", CountingArgon2id)
    threads = [
        threading.Thread(target=kdf_module.derive_key, args=(passphrase(), b"s" * 16, FAST_KDF))
        for _ in range(6)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert peak == 1


def test_the_header_records_the_production_kdf_parameters(tmp_path: Path) -> None:
    store = VaultFile(tmp_path / "vault.sp", keyring=MemoryKeyring())
    store.create(passphrase()).lock()  # default parameters: the production ones
    header = store.header()
    assert (header.kdf.memory_kib, header.kdf.iterations, header.kdf.lanes) == (65536, 10, 1)
    assert b'"memory_kib":65536' in store.path.read_bytes()[PREFIX_BYTES:]


def test_no_error_text_cause_or_log_record_carries_a_value(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")
    store, vault = make_vault(tmp_path)
    canary_key = b"-----BEGIN OPENSSH PRIVATE KEY-----\n" + CANARY_TOKEN + b"\n"
    attempts: list[Callable[[], object]] = [
        lambda: store.unlock(SecretBytes(CANARY_PASSWORD)),
        lambda: vault.add("deploy-token", "token", {"token": SecretBytes(CANARY_TOKEN)}),
        lambda: vault.add("k", "ssh-key", {"private_key": SecretBytes(canary_key)}),
        lambda: vault.add("t", "token", {"token": SecretBytes(CANARY_TOKEN + b"\n")}),
        lambda: vault.rotate("registry", {"username": "ci", "password": SecretBytes(b"")}),
        lambda: vault.verify_passphrase(SecretBytes(CANARY_PASSWORD)),
    ]
    texts = []
    for attempt in attempts:
        with pytest.raises(Error) as caught:  # every refusal is one of ours
            attempt()
        error: BaseException | None = caught.value
        while error is not None:
            texts.append(repr(error) + str(error))
            if isinstance(error, Error):
                texts.append(error.diagnostic())
            error = error.__cause__ or error.__context__
    texts += [record.getMessage() for record in caplog.records]
    joined = "\n".join(texts)
    for canary in (CANARY_TOKEN, CANARY_PASSWORD):
        assert canary.decode() not in joined


def test_values_handed_out_are_independent_buffers(tmp_path: Path) -> None:
    _, vault = make_vault(tmp_path)
    first = vault.secret("deploy-token")
    assert isinstance(first, TokenSecret)
    first.wipe()  # an executor wiping its copy leaves the vault's value intact
    again = vault.secret("deploy-token")
    assert isinstance(again, TokenSecret) and again.token.reveal() == CANARY_TOKEN


def test_disable_still_drops_the_wrap_when_the_keyring_refuses_to_delete(tmp_path: Path) -> None:
    class StuckKeyring(MemoryKeyring):
        def delete(self, account: str) -> None:
            raise KeyringProblem("cannot delete a key from the OS keyring (KeyringLocked)")

    store, vault = make_vault(tmp_path, keyring=StuckKeyring())
    vault.enable_keyring()
    with pytest.raises(KeyringProblem, match="disabled in the vault"):
        vault.disable_keyring()
    assert store.header().keyring_wrap is None
    with pytest.raises(KeyringProblem, match="not enabled"):
        store.unlock_with_keyring()
