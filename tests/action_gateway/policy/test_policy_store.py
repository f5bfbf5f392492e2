"""Only the accepted policy is served; the file is a proposal until accepted."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.fakes import FakeUnlockedVault, FakeVaultStore, Recorder
from harness.gateway import POLICY
from safeport.action_gateway.policy.store import PolicyChanged, PolicyStore, policy_diff
from safeport.shared.schemas.config import policy_digest
from safeport.vault.secrets import SecretBytes


def _vault() -> FakeUnlockedVault:
    return FakeVaultStore(b"pw", Recorder(None)).unlock(SecretBytes(b"pw"))


def test_nothing_is_served_before_an_acceptance(tmp_path: Path) -> None:
    (tmp_path / "gateway.toml").write_text(POLICY)
    store = PolicyStore(tmp_path / "gateway.toml")
    assert store.load_accepted(_vault()) is None
    assert store.status().pending is True and store.served is None


def test_accept_serves_exactly_the_text_that_was_shown(tmp_path: Path) -> None:
    path = tmp_path / "gateway.toml"
    path.write_text(POLICY)
    store = PolicyStore(path)
    vault = _vault()
    served = store.accept(vault, policy_digest(POLICY))
    assert served.digest == policy_digest(POLICY)
    accepted = vault.accepted_policy()
    assert accepted is not None and accepted.text == POLICY
    path.write_text(POLICY + "\n# agent edit\n")
    assert store.status().pending is True
    assert store.served is served  # the edit changes nothing served
    with pytest.raises(PolicyChanged):
        store.accept(vault, policy_digest(POLICY))


def test_a_fresh_store_serves_what_the_vault_holds(tmp_path: Path) -> None:
    path = tmp_path / "gateway.toml"
    path.write_text(POLICY)
    vault = _vault()
    PolicyStore(path).accept(vault, policy_digest(POLICY))
    path.write_text("garbage = [")
    fresh = PolicyStore(path)
    served = fresh.load_accepted(vault)
    assert served is not None and served.text == POLICY
    assert fresh.status().file_error is not None


def test_the_diff_shows_added_lines() -> None:
    diff = policy_diff("a = 1\n", "a = 1\nb = 2\n")
    assert "+b = 2" in diff and "--- accepted" in diff
