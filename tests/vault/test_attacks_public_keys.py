"""A swapped vault.pub.json: what sealing while locked does with it, and where it is caught.

The attacker replaces the public file with keys of their own. Records sealed while the vault is
locked then go to the attacker (readable by them, not by the owner), and the chain still
verifies; the swap is caught when the vault is unlocked and when a checkpoint is verified.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from safeport.shared.audit import JournalWriter, read_records, verify_journal
from safeport.vault import AuditSealer, UnsafeVaultFile, VaultFile, dump_checkpoints
from tests.cli.cli_runner import run_sp
from tests.vault.tamper import rewrite_header
from tests.vault.vault_factory import PASSPHRASE, make_vault, passphrase


@pytest.fixture
def homes(tmp_path: Path) -> tuple[Path, Path]:
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    mine.mkdir(mode=0o700)
    theirs.mkdir(mode=0o700)
    (mine / "pass").write_bytes(PASSPHRASE + b"\n")
    return mine, theirs


def _one_line_failure(done: subprocess.CompletedProcess[str], code: int) -> str:
    assert done.returncode == code, (done.stdout, done.stderr)
    assert done.stderr.startswith("sp: ") and len(done.stderr.splitlines()) == 1
    return done.stderr


def test_records_sealed_while_locked_go_to_the_swapped_key_and_unlock_flags_it(
    homes: tuple[Path, Path],
) -> None:
    mine, theirs = homes
    store, vault = make_vault(mine)
    vault.lock()
    attacker_store, attacker = make_vault(theirs)
    store.public_path.write_bytes(attacker_store.public_path.read_bytes())
    audit = mine / "audit"
    audit.mkdir(mode=0o700)
    journal = audit / "actions.jsonl"
    # What a gateway does while locked: seal to whatever vault.pub.json says.
    with JournalWriter(journal, sealer=AuditSealer.from_public_file(store.public_path)) as w:
        w.append("action.intent", {"target": "deploy-api", "marker": "swap-marker-17"})
    assert verify_journal(journal).chain == "valid"  # the chain is no help here
    (record,) = read_records(journal)
    assert b"swap-marker-17" in attacker.audit_opener().open(record["sealed"])
    # The owner cannot read it, and is told so instead of getting an error.
    shown = run_sp("audit", "show", "--json", "--passphrase-file", str(mine / "pass"), home=mine)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["body"] == "<sealed: not openable with this vault>"
    # The swap is caught at the next unlock, and the remedy restores the real keys.
    done = run_sp("vault", "unlock", "--passphrase-file", str(mine / "pass"), home=mine)
    assert "does not hold this vault's public keys" in _one_line_failure(done, 2)
    status = json.loads(run_sp("vault", "status", "--json", home=mine).stdout)
    assert status["public_file"] == "differs from header"
    fixed = run_sp(
        "vault", "unlock", "--rewrite-public-keys", "--passphrase-file", str(mine / "pass"),
        home=mine,
    )  # fmt: skip
    assert fixed.returncode == 2, fixed.stderr  # no gateway holds it: locked at rest
    assert "vault.pub.json rewritten" in fixed.stdout
    assert VaultFile(store.path).unlock(passphrase()).public_file_state() == "matches"


@pytest.mark.parametrize("planted", ["fifo", "garbage", "symlink", "world-writable"])
def test_an_unusable_public_file_is_a_mismatch_at_unlock_not_a_crash(
    homes: tuple[Path, Path], planted: str
) -> None:
    mine, theirs = homes
    store, vault = make_vault(mine)
    original = store.public_path.read_bytes()
    attacker_store, _ = make_vault(theirs)
    store.public_path.unlink()
    if planted == "fifo":
        os.mkfifo(store.public_path, 0o644)
    elif planted == "garbage":
        store.public_path.write_bytes(b'{"format": "safeport-vault-public-keys", "version": 1}')
    elif planted == "symlink":
        store.public_path.symlink_to(attacker_store.public_path)
    else:
        store.public_path.write_bytes(attacker_store.public_path.read_bytes())
        store.public_path.chmod(0o666)
    assert vault.public_file_state() == "mismatch"
    done = run_sp("vault", "unlock", "--passphrase-file", str(mine / "pass"), home=mine)
    assert "does not hold this vault's public keys" in _one_line_failure(done, 2)
    if planted == "symlink":  # a link is never replaced silently: the owner removes it
        with pytest.raises(UnsafeVaultFile, match="symbolic link"):
            vault.rewrite_public_file()
        store.public_path.unlink()
    vault.rewrite_public_file()
    assert store.public_path.read_bytes() == original


def _forged_setup(mine: Path, theirs: Path) -> tuple[Path, Path, Path]:
    """The owner's journal, rewritten by an attacker who signs its head with their own key."""
    store, vault = make_vault(mine)
    audit = mine / "audit"
    audit.mkdir(mode=0o700)
    journal = audit / "actions.jsonl"
    with JournalWriter(journal) as writer:
        for index in range(5):
            writer.append("test.event", {"index": index})
        genuine = vault.checkpoint_signer().sign("actions", writer.head)
    genuine_file = mine / "genuine-checkpoint.json"
    genuine_file.write_bytes(dump_checkpoints([genuine]))
    trusted_copy = mine / "trusted.pub.json"
    trusted_copy.write_bytes(store.public_path.read_bytes())
    vault.lock()
    # The attacker rewrites the journal from scratch and signs its head with their key.
    attacker_store, attacker = make_vault(theirs)
    journal.unlink()
    with JournalWriter(journal) as writer:
        writer.append("test.event", {"index": "forged"})
        forged = attacker.checkpoint_signer().sign("actions", writer.head)
    forged_file = mine / "forged-checkpoint.json"
    forged_file.write_bytes(dump_checkpoints([forged]))
    store.public_path.write_bytes(attacker_store.public_path.read_bytes())
    return forged_file, genuine_file, trusted_copy


def test_a_checkpoint_signed_by_a_key_in_a_swapped_public_file_is_refused(
    homes: tuple[Path, Path],
) -> None:
    mine, theirs = homes
    forged_file, genuine_file, trusted_copy = _forged_setup(mine, theirs)
    done = run_sp("audit", "verify", "--checkpoint", str(forged_file), home=mine)
    assert "does not hold the keys recorded in" in _one_line_failure(done, 1)
    assert done.stdout == ""
    # Against a copy of the public file the owner kept, the forgery is plainly foreign ...
    done = run_sp(
        "audit", "verify", "--checkpoint", str(forged_file), "--public-keys", str(trusted_copy),
        home=mine,
    )  # fmt: skip
    assert "the checkpoint was signed by SHA256:" in _one_line_failure(done, 1)
    # ... and the genuine checkpoint reports the rewrite.
    done = run_sp(
        "audit", "verify", "--checkpoint", str(genuine_file), "--public-keys", str(trusted_copy),
        home=mine,
    )  # fmt: skip
    assert done.returncode == 1
    assert "journal ends at sequence 1 but sequence 5 was signed" in done.stdout


def test_an_attacker_who_also_rewrites_the_header_keys_makes_the_vault_refuse_to_unlock(
    homes: tuple[Path, Path],
) -> None:
    """Documented limit: without the passphrase, verify can only compare the public file with
    the (unauthenticated) header copy. Editing both passes verify, but the vault then refuses
    to unlock at all, which the owner and the gateway cannot miss."""
    mine, theirs = homes
    forged_file, _, _ = _forged_setup(mine, theirs)
    public = json.loads((mine / "vault.pub.json").read_bytes())

    def swap_keys(header: dict[str, object]) -> None:
        header["public"] = {
            "audit_x25519": public["audit_x25519"],
            "checkpoint_ed25519": public["checkpoint_ed25519"],
        }

    rewrite_header(mine / "vault.sp", swap_keys)
    done = run_sp("audit", "verify", "--checkpoint", str(forged_file), home=mine)
    assert done.returncode == 0  # the limit, pinned
    unlock = run_sp("vault", "unlock", "--passphrase-file", str(mine / "pass"), home=mine)
    assert "cannot unlock the vault" in _one_line_failure(unlock, 1)


def test_an_unreadable_vault_file_makes_verify_ask_for_a_trusted_copy(
    homes: tuple[Path, Path],
) -> None:
    mine, theirs = homes
    forged_file, _, trusted_copy = _forged_setup(mine, theirs)
    (mine / "vault.sp").write_bytes(b"not a vault at all")
    done = run_sp("audit", "verify", "--checkpoint", str(forged_file), home=mine)
    assert "--public-keys" in _one_line_failure(done, 1)
    # With no vault here at all (an auditor's machine), the public file alone is used.
    (mine / "vault.sp").unlink()
    (mine / "vault.pub.json").write_bytes(trusted_copy.read_bytes())
    done = run_sp("audit", "verify", "--checkpoint", str(forged_file), home=mine)
    assert "the checkpoint was signed by SHA256:" in _one_line_failure(done, 1)
