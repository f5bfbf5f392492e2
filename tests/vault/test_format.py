"""The vault file layout and KDF bounds (pure; no files)."""

from __future__ import annotations

import dataclasses
import struct

import pytest

from safeport.vault import CannotUnlock, KdfParams, NotAVault
from safeport.vault.format import (
    MAGIC,
    Header,
    KeyWrap,
    encode_prefix_and_header,
    split_file,
)
from safeport.vault.interface import VaultPublicKeys
from safeport.vault.kdf import MAX_MEMORY_KIB, PRODUCTION_KDF


def _header() -> Header:
    return Header(
        vault_id="ab" * 16,
        generation=3,
        entries=2,
        kdf=PRODUCTION_KDF,
        salt=b"s" * 16,
        passphrase_wrap=KeyWrap(nonce=b"n" * 12, ciphertext=b"c" * 48),
        keyring_wrap=None,
        public=VaultPublicKeys(audit_x25519=b"a" * 32, checkpoint_ed25519=b"e" * 32),
        payload_nonce=b"p" * 12,
    )


def test_header_round_trips_and_its_bytes_are_the_associated_data() -> None:
    prefix = encode_prefix_and_header(_header())
    header, aad, ciphertext = split_file(prefix + b"CIPHERTEXT", source="v")
    assert header == _header()
    assert aad == prefix
    assert ciphertext == b"CIPHERTEXT"


def test_a_file_without_the_magic_is_not_a_vault() -> None:
    with pytest.raises(NotAVault, match="is not a safeport vault"):
        split_file(b'{"hello": "world"}', source="notes.json")
    with pytest.raises(NotAVault):
        split_file(b"", source="empty")


def test_an_unknown_version_is_named_and_is_not_a_cannot_unlock() -> None:
    prefix = bytearray(encode_prefix_and_header(_header()))
    struct.pack_into(">H", prefix, len(MAGIC), 2)
    with pytest.raises(NotAVault, match="format version 2; this sp reads version 1"):
        split_file(bytes(prefix) + b"x" * 32, source="v")


def test_a_damaged_header_fails_exactly_like_a_wrong_passphrase() -> None:
    prefix = encode_prefix_and_header(_header())
    for cut in (len(MAGIC) + 3, len(prefix) - 1):
        with pytest.raises(CannotUnlock):
            split_file(prefix[:cut], source="v")
    garbled = prefix.replace(b'"entries":2', b'"entries":"2"')
    with pytest.raises(CannotUnlock):
        split_file(garbled, source="v")


@pytest.mark.parametrize(
    "costs",
    [
        {"memory_kib": MAX_MEMORY_KIB * 2},  # a tampered header must not allocate gigabytes
        {"iterations": 10_000},
        {"lanes": 0},
        {"iterations": 0},
    ],
)
def test_kdf_parameters_out_of_bounds_are_refused(costs: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="out of range"):
        dataclasses.replace(PRODUCTION_KDF, **costs)


def test_production_kdf_stays_within_the_64_mib_cap() -> None:
    assert KdfParams(memory_kib=65536, iterations=10, lanes=1) == PRODUCTION_KDF
    assert PRODUCTION_KDF.memory_kib <= 64 * 1024
