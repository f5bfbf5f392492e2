"""GatewayCore's use cases in-process, on a real vault file and real journals: what one call
does (the vault saved, pooled connections closed, the save journaled with its generation and
signed), and that each refuses with the one locked error while the vault is locked."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.fakes import read_record
from safeport.action_gateway.core.gateway_core import GatewayCore
from safeport.shared.audit import read_records
from safeport.vault.errors import VaultLocked
from safeport.vault.secrets import SecretBytes
from tests.action_gateway.in_process_core import in_process_core
from tests.vault.vault_factory import passphrase


@pytest.fixture
def core(tmp_path: Path) -> Iterator[GatewayCore]:
    gateway, _ = in_process_core(tmp_path)
    try:
        yield gateway
    finally:
        gateway.lock("test over")
        gateway.close()


def _sessions(tmp_path: Path) -> list[dict[str, object]]:
    return read_records(tmp_path / "h" / "audit" / "sessions.jsonl")


def _touched(tmp_path: Path) -> list[str]:
    return [str(e["event"]) for e in read_record(tmp_path / "h" / "record.jsonl")]


def test_credential_use_cases_save_close_pooled_connections_and_journal_the_generation(
    core: GatewayCore, tmp_path: Path
) -> None:
    core.prove_passphrase(passphrase())
    core.add_credential("deploy-token", "token", {"token": SecretBytes(b"first")})
    assert [entry.name for entry in core.entries()] == ["deploy-token"]
    assert "executor.close_all" not in _touched(tmp_path)  # nothing pooled used it yet
    core.rotate_credential("deploy-token", {"token": SecretBytes(b"second")})
    # Connections authenticated with the old value must not outlive it.
    assert _touched(tmp_path).count("executor.close_all") == 1
    core.remove_credential("deploy-token")
    assert _touched(tmp_path).count("executor.close_all") == 2
    assert core.entries() == []
    saves = [r for r in _sessions(tmp_path) if str(r["kind"]).startswith("vault.entry_")]
    assert [r["kind"] for r in saves] == [
        "vault.entry_added",
        "vault.entry_rotated",
        "vault.entry_removed",
    ]
    generations = [r["ref"]["generation"] for r in saves]  # type: ignore[index]
    assert generations == sorted(generations) and len(set(generations)) == 3
    # Each save was signed at once: the checkpoint covers the last record.
    signed = {c.journal: c.seq for c in core.checkpoint_view().checkpoints}
    assert signed["sessions"] == _sessions(tmp_path)[-1]["seq"]


def test_every_use_case_that_needs_the_vault_refuses_with_the_one_locked_error(
    core: GatewayCore, tmp_path: Path
) -> None:
    refused = [
        core.entries,
        lambda: core.add_credential("t", "token", {"token": SecretBytes(b"x")}),
        lambda: core.rotate_credential("t", {"token": SecretBytes(b"x")}),
        lambda: core.remove_credential("t"),
        lambda: core.accept_policy("0" * 64, None),
        core.catalog,
    ]
    for call in refused:
        with pytest.raises(VaultLocked):
            call()
    assert "executor.close_all" not in _touched(tmp_path)
    assert not [r for r in _sessions(tmp_path) if str(r["kind"]).startswith("vault.entry_")]
