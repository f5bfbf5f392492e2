"""Side channels: canaries in reprs, pickles, copies, exception chains, tracebacks with locals,
CLI output for badly formatted value files; equal work for every unlock failure; zeroed buffers.
"""

from __future__ import annotations

import base64
import copy
import pickle
import subprocess
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.argon2 import Argon2id

from safeport.errors import Error
from safeport.vault import CannotUnlock, OpenVault, VaultFile
from safeport.vault import envelope as envelope_module
from safeport.vault import kdf as kdf_module
from safeport.vault import payload as payload_module
from safeport.vault import store as store_module
from safeport.vault import unlocked as unlocked_module
from safeport.vault.secrets import SecretBytes, TokenSecret
from tests.cli.cli_runner import run_sp
from tests.vault.tamper import rewrite_header, split
from tests.vault.vault_factory import (
    CANARY_PASSWORD,
    CANARY_TOKEN,
    FAST_KDF,
    MemoryKeyring,
)

CANARY_PASSPHRASE = b"CANARY-PASSPHRASE-5c81f0"
CANARY_KEY_PASSPHRASE = b"CANARY-KEYPASS-a61e2b"
CANARIES = (CANARY_TOKEN, CANARY_PASSWORD, CANARY_PASSPHRASE, CANARY_KEY_PASSPHRASE)
GARBAGE_OPENSSH_KEY = b"-----BEGIN OPENSSH PRIVATE KEY-----\n" + CANARY_TOKEN + b"\n"
GARBAGE_PEM_KEY = (
    b"-----BEGIN PRIVATE KEY-----\n" + CANARY_PASSWORD + b"\n-----END PRIVATE KEY-----\n"
)


def _clean(text: str | bytes) -> None:
    raw = text.encode() if isinstance(text, str) else text
    for canary in CANARIES:
        assert canary not in raw, canary


def _canary_vault(folder: Path) -> tuple[VaultFile, OpenVault]:
    store = VaultFile(folder / "vault.sp", keyring=MemoryKeyring())
    vault = store.create(SecretBytes(CANARY_PASSPHRASE), kdf=FAST_KDF)
    vault.add("deploy-token", "token", {"token": SecretBytes(CANARY_TOKEN)})
    vault.add("registry", "basic", {"username": "ci", "password": SecretBytes(CANARY_PASSWORD)})
    return store, vault


def _ssh_key(folder: Path, key_passphrase: bytes) -> bytes:
    path = folder / "id_test"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", key_passphrase.decode(), "-f", str(path)],
        check=True,
    )
    return path.read_bytes()


def _holders(store: VaultFile, vault: OpenVault, key: bytes) -> list[object]:
    vault.add(
        "ssh",
        "ssh-key",
        {"private_key": SecretBytes(key), "passphrase": SecretBytes(CANARY_KEY_PASSPHRASE)},
    )
    payload = vault._payload
    return [
        vault,
        store,
        payload,
        *payload.entries.values(),
        vault.secret("deploy-token"),
        vault.secret("registry"),
        vault.secret("ssh"),
        SecretBytes(CANARY_TOKEN),
        vault.audit_opener(),
        vault.checkpoint_signer(),
    ]


def test_no_holder_shows_a_secret_in_repr_str_or_format(tmp_path: Path) -> None:
    store, vault = _canary_vault(tmp_path)
    for holder in _holders(store, vault, _ssh_key(tmp_path, CANARY_KEY_PASSPHRASE)):
        _clean(repr(holder) + str(holder) + f"{holder}" + f"{holder!r}")


def test_no_holder_can_be_pickled_or_deep_copied(tmp_path: Path) -> None:
    store, vault = _canary_vault(tmp_path)
    holders = _holders(store, vault, _ssh_key(tmp_path, CANARY_KEY_PASSPHRASE))
    for holder in holders[:1] + holders[2:]:  # the locked VaultFile holds nothing
        for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
            with pytest.raises((TypeError, AttributeError, pickle.PicklingError)) as caught:
                pickle.dumps(holder, protocol=protocol)
            _clean(str(caught.value))
        with pytest.raises(TypeError):
            copy.deepcopy(holder)


def test_an_unlocked_vault_cannot_be_copied_past_its_lock(tmp_path: Path) -> None:
    _, vault = _canary_vault(tmp_path)
    with pytest.raises(TypeError, match="cannot be pickled or copied"):
        copy.copy(vault)
    # A shallow copy of a handed-out value shares the buffer: wiping one wipes both.
    token = vault.secret("deploy-token")
    assert isinstance(token, TokenSecret)
    twin = copy.copy(token)
    token.wipe()
    assert len(twin.token) == 0


def _chain_texts(error: BaseException, *, with_locals: bool) -> str:
    texts = []
    seen: BaseException | None = error
    while seen is not None:
        texts.append(repr(seen) + str(seen))
        if isinstance(seen, Error):
            texts.append(seen.diagnostic())
        seen = seen.__cause__ or seen.__context__
    formatted = traceback.TracebackException.from_exception(error, capture_locals=with_locals)
    texts.extend(formatted.format())
    return "\n".join(texts)


def _refusals(store: VaultFile, vault: OpenVault, folder: Path) -> list[Callable[[], object]]:
    key = _ssh_key(folder, b"the-right-one")
    # Canaries come from module constants inside each call, never from a closure: closure
    # cells are the test's own locals, which a locals-capturing traceback rightly shows.

    def tag_flipped_unlock() -> object:
        data = bytearray(store.path.read_bytes())
        data[-1] ^= 0x01  # the payload decrypts fine; only the tag check fails
        store.path.write_bytes(bytes(data))
        return store.unlock(SecretBytes(CANARY_PASSPHRASE))

    def tampered_unlock() -> object:
        rewrite_header(store.path, lambda h: h.__setitem__("vault_id", "é" * 32))
        return store.unlock(SecretBytes(CANARY_PASSPHRASE))

    return [
        lambda: store.unlock(SecretBytes(CANARY_PASSWORD)),
        lambda: vault.verify_passphrase(SecretBytes(CANARY_TOKEN)),
        lambda: vault.change_passphrase(SecretBytes(CANARY_TOKEN), SecretBytes(b"x")),
        lambda: vault.add("t", "token", {"token": SecretBytes(CANARY_TOKEN + b"\r\nX: 1")}),
        lambda: vault.add("t", "token", {"token": SecretBytes(CANARY_TOKEN * 5000)}),
        lambda: vault.add("deploy-token", "token", {"token": SecretBytes(CANARY_TOKEN)}),
        lambda: vault.add("k", "ssh-key", {"private_key": SecretBytes(GARBAGE_OPENSSH_KEY)}),
        lambda: vault.add("k", "ssh-key", {"private_key": SecretBytes(GARBAGE_PEM_KEY)}),
        lambda: vault.add(
            "k",
            "ssh-key",
            {"private_key": SecretBytes(key), "passphrase": SecretBytes(CANARY_KEY_PASSPHRASE)},
        ),
        lambda: vault.rotate("registry", {"username": "ci", "password": SecretBytes(b"")}),
        lambda: vault.audit_opener().open({"alg": "x", "ct": "AAAA"}),
        tag_flipped_unlock,
        tampered_unlock,
    ]


def test_no_refusal_leaks_a_secret_even_in_a_traceback_that_captures_locals(
    tmp_path: Path,
) -> None:
    store, vault = _canary_vault(tmp_path)
    for attempt in _refusals(store, vault, tmp_path):
        with pytest.raises(Error) as caught:  # every refusal is one of ours
            attempt()
        _clean(_chain_texts(caught.value, with_locals=False))
        _clean(_chain_texts(caught.value, with_locals=True))


def test_a_library_that_keeps_the_passphrase_view_cannot_read_it_later(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kept: list[memoryview] = []
    real = Argon2id

    class Keeping:
        def __init__(self, **options: Any) -> None:
            self._inner = real(**options)

        def derive_into(self, material: memoryview, out: bytearray) -> int:
            kept.append(material)
            return self._inner.derive_into(kdf_module.as_bytes(material), out)

    monkeypatch.setattr(kdf_module, "Argon2id", Keeping)
    kdf_module.derive_key(SecretBytes(CANARY_PASSPHRASE), b"s" * 16, FAST_KDF)
    with pytest.raises(ValueError, match="released"):
        bytes(kept[0])
    _clean(repr(kept[0]))


@pytest.fixture
def kdf_count(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    calls: list[int] = []
    real = kdf_module.derive_key

    def counting(*args: Any, **kwargs: Any) -> bytearray:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(store_module, "derive_key", counting)
    yield calls


def _flip_ciphertext(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-20] ^= 0x01
    path.write_bytes(bytes(data))


def _flip_wrap(path: Path) -> None:
    def change(header: dict[str, Any]) -> None:
        key = header["wrap"]["key"]
        header["wrap"]["key"] = ("A" if key[0] != "A" else "B") + key[1:]

    rewrite_header(path, change)


def test_wrong_passphrase_and_tampering_do_the_same_work_and_say_the_same(
    tmp_path: Path, kdf_count: list[int]
) -> None:
    """Each failure that gets past the header runs exactly one KDF and one AEAD check before
    the same error, so neither the message nor the work tells them apart. (A header too broken
    to parse fails before the KDF: only someone who broke it can see that difference.)"""
    store, vault = _canary_vault(tmp_path)
    vault.lock()
    original = store.path.read_bytes()
    messages = set()
    cases: list[tuple[bytes, Callable[[Path], object] | None]] = [
        (b"wrong passphrase", None),
        (CANARY_PASSPHRASE, _flip_ciphertext),
        (CANARY_PASSPHRASE, _flip_wrap),
        (CANARY_PASSPHRASE, lambda p: p.write_bytes(p.read_bytes()[:-1])),
    ]
    for secret, damage in cases:
        store.path.write_bytes(original)
        if damage is not None:
            damage(store.path)
        kdf_count.clear()
        with pytest.raises(CannotUnlock) as caught:
            store.unlock(SecretBytes(secret))
        assert len(kdf_count) == 1
        messages.add(caught.value.diagnostic())
    assert len(messages) == 1


def test_every_key_buffer_is_zeroed_after_use_and_on_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, vault = _canary_vault(tmp_path)
    keks: list[bytearray] = []
    plaintexts: list[bytearray] = []
    data_keys: list[bytearray] = []
    real_derive, real_open = kdf_module.derive_key, envelope_module.open_payload
    real_unwrap = envelope_module.unwrap_from_passphrase
    real_encode = payload_module.encode_payload

    def derive(*args: Any) -> bytearray:
        keks.append(real_derive(*args))
        return keks[-1]

    def open_payload(*args: Any) -> bytearray:
        plaintexts.append(real_open(*args))
        return plaintexts[-1]

    def unwrap(*args: Any) -> bytearray:
        data_keys.append(real_unwrap(*args))
        return data_keys[-1]

    def encode(*args: Any) -> bytearray:
        plaintexts.append(real_encode(*args))
        return plaintexts[-1]

    monkeypatch.setattr(store_module, "derive_key", derive)
    monkeypatch.setattr(envelope_module, "open_payload", open_payload)
    monkeypatch.setattr(envelope_module, "unwrap_from_passphrase", unwrap)
    monkeypatch.setattr(unlocked_module, "encode_payload", encode)
    reopened = store.unlock(SecretBytes(CANARY_PASSPHRASE))
    reopened.add("one-more", "token", {"token": SecretBytes(CANARY_TOKEN)})
    reopened.lock()
    vault.lock()
    _flip_ciphertext(store.path)  # the data key unwraps, then the payload fails
    with pytest.raises(CannotUnlock):
        store.unlock(SecretBytes(CANARY_PASSPHRASE))
    assert keks and plaintexts and len(data_keys) == 2
    for buffer in keks + plaintexts + data_keys:
        assert buffer == bytearray(len(buffer))


def test_lock_zeroes_the_private_keys_the_signer_and_opener_hold(tmp_path: Path) -> None:
    _, vault = _canary_vault(tmp_path)
    audit_private = vault._payload.audit_private
    signing_private = vault._payload.checkpoint_private
    assert len(audit_private) == len(signing_private) == 32
    vault.lock()
    assert len(audit_private) == len(signing_private) == 0


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir(mode=0o700)
    _canary_vault(folder)[1].lock()
    (folder / "pass").write_bytes(CANARY_PASSPHRASE + b"\n")
    return folder


def _one_line(done: subprocess.CompletedProcess[str], code: int) -> str:
    assert done.returncode == code, (done.stdout, done.stderr)
    assert done.stderr.startswith("sp: ") and len(done.stderr.splitlines()) == 1
    assert "Traceback" not in done.stderr
    _clean(done.stdout + done.stderr)
    return done.stderr


@pytest.mark.parametrize(
    ("kind", "value", "extra", "message"),
    [
        ("ssh-key", CANARY_TOKEN + b"\n", (), "not a valid private key"),
        (
            "ssh-key",
            b"-----BEGIN RSA PRIVATE KEY-----\n"
            + CANARY_PASSWORD
            + b"\n-----END RSA PRIVATE KEY-----\n",
            (),
            "not a valid private key",
        ),
        ("token", CANARY_TOKEN + b"\x00tail", (), "control character"),
        ("token", b"\x1b[2J" + CANARY_TOKEN, (), "control character"),
        ("token", CANARY_TOKEN * 6000, (), "larger than"),
        ("basic", CANARY_PASSWORD + b"\r\n\r\n", ("--username", "ci"), "control character"),
        ("basic", CANARY_PASSWORD, ("--username", "c:i"), "':' or control character"),
    ],
)
def test_badly_formatted_value_files_never_echo_the_value(
    home: Path, kind: str, value: bytes, extra: tuple[str, ...], message: str
) -> None:
    (home / "value").write_bytes(value)
    before = (home / "vault.sp").read_bytes()
    done = run_sp(
        "vault", "add", "new-entry", "--kind", kind, "--value-file", str(home / "value"), *extra,
        "--passphrase-file", str(home / "pass"), home=home,
    )  # fmt: skip
    assert message in _one_line(done, 2)
    assert (home / "vault.sp").read_bytes() == before


def test_a_wrong_ssh_key_passphrase_from_a_file_is_never_echoed(home: Path) -> None:
    (home / "key").write_bytes(_ssh_key(home, b"the-right-one"))
    (home / "keypass").write_bytes(CANARY_KEY_PASSPHRASE + b"\n")
    done = run_sp(
        "vault", "add", "k", "--kind", "ssh-key", "--value-file", str(home / "key"),
        "--key-passphrase-file", str(home / "keypass"), "--passphrase-file", str(home / "pass"),
        home=home,
    )  # fmt: skip
    assert "passphrase is wrong" in _one_line(done, 2)


def test_every_reporting_command_and_format_is_clean(home: Path) -> None:
    for args in (
        ("vault", "status"),
        ("vault", "status", "--json"),
        ("vault", "list", "--passphrase-file", str(home / "pass")),
        ("vault", "list", "--json", "--passphrase-file", str(home / "pass")),
        ("vault", "unlock", "--passphrase-file", str(home / "pass")),
        ("vault", "backup", str(home / "copy.sp")),
    ):
        done = run_sp(*args, home=home)
        # status and unlock report a vault locked at rest (no gateway holds it) with 2
        assert done.returncode == (2 if args[1] in ("status", "unlock") else 0), (args, done.stderr)
        _clean(done.stdout + done.stderr)
    _clean((home / "copy.sp").read_bytes() + (home / "vault.pub.json").read_bytes())
    _clean(split(home / "vault.sp")[1])


def test_a_tampered_tag_leaves_no_decrypted_secret_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GCM writes the plaintext before it checks the tag. With only the tag altered, that
    plaintext is the real payload (every secret) or the real data key: it must be zeroed."""
    store, vault = _canary_vault(tmp_path)
    vault.lock()
    outputs: list[bytearray] = []
    real_aead = AESGCM

    class RecordingAESGCM:
        def __init__(self, key: bytearray) -> None:
            self._inner = real_aead(key)

        def decrypt_into(self, nonce: bytes, data: bytes, aad: bytes, out: bytearray) -> int:
            outputs.append(out)
            return self._inner.decrypt_into(nonce, data, aad, out)

    monkeypatch.setattr(envelope_module, "AESGCM", RecordingAESGCM)
    original = store.path.read_bytes()
    tag_flipped = bytearray(original)
    tag_flipped[-1] ^= 0x01
    store.path.write_bytes(bytes(tag_flipped))
    with pytest.raises(CannotUnlock):
        store.unlock(SecretBytes(CANARY_PASSPHRASE))
    payload_out = outputs[-1]
    assert len(payload_out) > 100 and payload_out == bytearray(len(payload_out))

    def flip_wrap_tag(header: dict[str, Any]) -> None:
        raw = bytearray(base64.b64decode(header["wrap"]["key"]))
        raw[-1] ^= 0x01
        header["wrap"]["key"] = base64.b64encode(bytes(raw)).decode()

    store.path.write_bytes(original)
    rewrite_header(store.path, flip_wrap_tag)
    outputs.clear()
    with pytest.raises(CannotUnlock):
        store.unlock(SecretBytes(CANARY_PASSPHRASE))
    (key_out,) = outputs
    assert len(key_out) == 32 and key_out == bytearray(32)
