"""Vault state: epochs void grants; only a proven passphrase counts as human activity."""

from __future__ import annotations

import pytest

from harness.fakes import FakeVaultStore, Recorder
from safeport.action_gateway.approvals.desktop_notice import BODY, notifier_argv
from safeport.action_gateway.core.vault_state import (
    PassphraseRejected,
    VaultState,
    should_auto_lock,
)
from safeport.vault.errors import VaultLocked
from safeport.vault.secrets import SecretBytes


class Clock:
    now = 100.0

    def __call__(self) -> float:
        return self.now


def _state() -> tuple[VaultState, Clock]:
    clock = Clock()
    return VaultState(FakeVaultStore(b"pw", Recorder(None)), clock=clock), clock


def test_every_lock_and_unlock_moves_the_epoch() -> None:
    state, _ = _state()
    with pytest.raises(VaultLocked):
        state.current()
    assert state.unlock(SecretBytes(b"pw"))
    _, first = state.current()
    assert state.lock("test")
    assert state.unlock(SecretBytes(b"pw"))
    _, second = state.current()
    assert second > first + 1


def test_a_wrong_passphrase_is_rejected_locked_or_unlocked() -> None:
    state, _ = _state()
    with pytest.raises(PassphraseRejected):
        state.unlock(SecretBytes(b"guess"))
    state.unlock(SecretBytes(b"pw"))
    with pytest.raises(PassphraseRejected):
        state.prove(SecretBytes(b"guess"))


def test_a_proof_without_unlock_checks_the_passphrase_and_leaves_a_locked_vault_locked() -> None:
    state, _ = _state()
    state.prove(SecretBytes(b"pw"), unlock=False)
    assert not state.unlocked
    with pytest.raises(PassphraseRejected):
        state.prove(SecretBytes(b"guess"), unlock=False)
    assert not state.unlocked
    state.unlock(SecretBytes(b"pw"))
    state.prove(SecretBytes(b"pw"), unlock=False)  # unlocked: proved as before
    with pytest.raises(PassphraseRejected):
        state.prove(SecretBytes(b"guess"), unlock=False)
    assert state.unlocked


def test_an_unlock_bound_to_an_epoch_does_not_undo_a_lock_made_since() -> None:
    state, _ = _state()
    found = state.epoch  # what an approver read at its start, the vault locked
    assert state.unlock(SecretBytes(b"pw"))
    assert state.lock("sp vault lock")
    assert not state.unlock(SecretBytes(b"pw"), at_epoch=found)
    assert not state.unlocked
    with pytest.raises(PassphraseRejected):  # the passphrase is still checked
        state.unlock(SecretBytes(b"guess"), at_epoch=found)
    assert state.unlock(SecretBytes(b"pw"), at_epoch=state.epoch)  # the lock it found: unlocks
    assert state.unlocked


def test_only_a_proven_passphrase_resets_the_idle_clock() -> None:
    state, clock = _state()
    state.unlock(SecretBytes(b"pw"))
    clock.now += 600
    state.current()  # what serving proposals does: no human activity
    assert state.idle_for() == 600
    state.prove(SecretBytes(b"pw"))
    assert state.idle_for() == 0


@pytest.mark.parametrize(
    ("unlocked", "idle_s", "minutes", "lock"),
    [
        (True, 601, 10, True),
        (True, 599, 10, False),
        (True, 10**9, 0, False),
        (False, 601, 10, False),
    ],
)
def test_auto_lock_decision(unlocked: bool, idle_s: float, minutes: int, lock: bool) -> None:
    assert should_auto_lock(unlocked, idle_s, minutes) is lock


def test_the_notification_carries_fixed_text_only() -> None:
    assert notifier_argv("linux", {}) is None  # no desktop session: no notification
    mac = notifier_argv("darwin", {})
    assert mac is not None and BODY in mac[-1]
