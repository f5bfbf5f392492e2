"""`sp vault` end to end: every bad input is one line on stderr, a non-zero exit, and an
unchanged file; no value ever appears in any output."""

from __future__ import annotations

import json
import os
import pty
import select
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from safeport.shared.audit import JournalWriter
from safeport.vault import AuditSealer, VaultFile
from tests.cli.cli_runner import run_sp
from tests.vault.vault_factory import (
    CANARY_PASSWORD,
    CANARY_TOKEN,
    PASSPHRASE,
    make_vault,
    passphrase,
    token_value,
)

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.cli.credentials.vault"

CANARIES = (CANARY_TOKEN.decode(), CANARY_PASSWORD.decode(), PASSPHRASE.decode())
UNLOCK_FAILURE = "sp: cannot unlock the vault: wrong passphrase, or the file was altered or damaged"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir(mode=0o700)
    (folder / "pass").write_bytes(PASSPHRASE + b"\n")
    return folder


def _assert_clean(done: subprocess.CompletedProcess[str]) -> None:
    for canary in CANARIES:
        assert canary not in done.stdout and canary not in done.stderr


def _assert_one_line_failure(done: subprocess.CompletedProcess[str], code: int) -> None:
    assert done.returncode == code, (done.stdout, done.stderr)
    assert done.stderr.startswith("sp: ") and len(done.stderr.splitlines()) == 1
    assert "Traceback" not in done.stderr
    _assert_clean(done)


def test_init_uses_the_production_kdf_and_never_overwrites(home: Path) -> None:
    done = run_sp("vault", "init", "--passphrase-file", str(home / "pass"), home=home)
    assert done.returncode == 0, done.stderr
    assert "checkpoint key: SHA256:" in done.stdout
    vault_file = home / "vault.sp"
    assert (vault_file.stat().st_mode & 0o777) == 0o600
    status = json.loads(run_sp("vault", "status", "--json", home=home).stdout)
    assert status["kdf"] == {
        "algorithm": "argon2id",
        "memory_kib": 65536,
        "iterations": 10,
        "lanes": 1,
    }
    assert status["entries"] == 0 and status["public_file"] == "matches header"
    before = vault_file.read_bytes()
    again = run_sp("vault", "init", "--passphrase-file", str(home / "pass"), home=home)
    _assert_one_line_failure(again, 2)
    assert "already exists" in again.stderr
    assert vault_file.read_bytes() == before
    _assert_clean(done)


def test_init_refuses_an_empty_passphrase_and_creates_nothing(home: Path) -> None:
    (home / "empty").write_bytes(b"\n")
    done = run_sp("vault", "init", "--passphrase-file", str(home / "empty"), home=home)
    _assert_one_line_failure(done, 2)
    assert "passphrase is empty" in done.stderr
    assert not (home / "vault.sp").exists()


def test_entries_round_trip_and_no_value_is_ever_printed(home: Path) -> None:
    make_vault(home)
    pf = ("--passphrase-file", str(home / "pass"))
    (home / "token").write_bytes(b"CANARY-ROTATED-0d9e\n")
    outputs = [
        run_sp("vault", "list", *pf, home=home),
        run_sp("vault", "list", *pf, "--json", home=home),
        run_sp("vault", "status", home=home),
        run_sp(
            "vault",
            "rotate",
            "deploy-token",
            "--kind",
            "token",
            "--value-file",
            str(home / "token"),
            *pf,
            home=home,
        ),
        run_sp(
            "vault",
            "add",
            "other",
            "--kind",
            "token",
            "--value-file",
            "-",
            *pf,
            home=home,
            stdin=CANARY_TOKEN + b"\n",
        ),
        run_sp("vault", "remove", "registry", *pf, home=home),
        run_sp("vault", "list", *pf, home=home),
    ]
    for index, done in enumerate(outputs):
        # `vault status` exits 2: no gateway holds the vault, so it is locked at rest
        assert done.returncode == (2 if index == 2 else 0), done.stderr
        _assert_clean(done)
        assert "CANARY-ROTATED" not in done.stdout + done.stderr
    listed = json.loads(outputs[1].stdout)
    assert [(e["name"], e["kind"]) for e in listed] == [
        ("deploy-token", "token"),
        ("registry", "basic"),
    ]
    assert "entries: 2" in outputs[2].stdout
    final = outputs[-1].stdout
    assert "deploy-token  token" in final and "rotated" in final
    assert "other  token" in final and "registry" not in final
    store = VaultFile(home / "vault.sp")
    vault = store.unlock(passphrase())
    assert token_value(vault, "deploy-token") == b"CANARY-ROTATED-0d9e"
    assert token_value(vault, "other") == CANARY_TOKEN


def _damage(kind: str, vault_file: Path) -> None:
    data = bytearray(vault_file.read_bytes())
    if kind == "flipped byte":
        data[len(data) // 2] ^= 0x40
    elif kind == "truncated":
        data = data[: len(data) - 20]
    elif kind == "unknown version":
        data[9] = 9
    elif kind == "not a vault":
        data = bytearray(b"# just some notes\n")
    vault_file.write_bytes(bytes(data))


@pytest.mark.parametrize(
    ("damage", "code", "message"),
    [
        ("flipped byte", 1, UNLOCK_FAILURE),
        ("truncated", 1, UNLOCK_FAILURE),
        ("unknown version", 2, "is a safeport vault of format version 9; this sp reads version 1"),
        ("not a vault", 2, "is not a safeport vault"),
    ],
)
def test_a_damaged_vault_fails_with_one_line_and_stays_as_it_is(
    home: Path, damage: str, code: int, message: str
) -> None:
    make_vault(home)
    _damage(damage, home / "vault.sp")
    before = (home / "vault.sp").read_bytes()
    for command in (("list",), ("add", "x", "--kind", "token", "--value-file", str(home / "pass"))):
        done = run_sp("vault", *command, "--passphrase-file", str(home / "pass"), home=home)
        _assert_one_line_failure(done, code)
        assert message in done.stderr
    assert (home / "vault.sp").read_bytes() == before


def test_a_wrong_passphrase_reads_exactly_like_tampering(home: Path) -> None:
    make_vault(home)
    (home / "wrong").write_bytes(b"wrong horse\n")
    wrong = run_sp("vault", "unlock", "--passphrase-file", str(home / "wrong"), home=home)
    _assert_one_line_failure(wrong, 1)
    _damage("flipped byte", home / "vault.sp")
    tampered = run_sp("vault", "unlock", "--passphrase-file", str(home / "pass"), home=home)
    assert wrong.stderr == tampered.stderr and wrong.returncode == tampered.returncode


@pytest.mark.parametrize("problem", ["symlink", "mode 0644", "mode 0660"])
def test_an_unsafe_vault_file_is_refused(home: Path, tmp_path: Path, problem: str) -> None:
    store, _ = make_vault(home)
    if problem == "symlink":
        elsewhere = tmp_path / "elsewhere.sp"
        store.path.rename(elsewhere)
        store.path.symlink_to(elsewhere)
    else:
        store.path.chmod(int(problem.split()[1], 8))
    done = run_sp("vault", "list", "--passphrase-file", str(home / "pass"), home=home)
    _assert_one_line_failure(done, 2)
    assert ("symbolic link" if problem == "symlink" else problem) in done.stderr


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (("add", "deploy-token", "--kind", "token", "--value-file", "-"), b"x", "already exists"),
        (
            ("add", "k", "--kind", "ssh-key", "--value-file", "-"),
            b"-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n",
            "not a valid private key",
        ),
        (
            ("add", "t", "--kind", "token", "--value-file", "-"),
            CANARY_TOKEN + b"\nsecond line\n",
            "control character",
        ),
        (("add", "t", "--kind", "token", "--value-file", "-"), b"\n", "empty"),
        (("add", "b", "--kind", "basic", "--value-file", "-"), b"pw", "needs --username"),
        (("add", "t", "--kind", "token"), b"", "no terminal to ask for the token"),
        (("remove", "ghost"), b"", "no entry named 'ghost'"),
        (("rotate", "ghost", "--kind", "token", "--value-file", "-"), b"v", "no entry named"),
    ],
)
def test_bad_entries_fail_with_one_line_and_leave_the_file_unchanged(
    home: Path, args: tuple[str, ...], stdin: bytes, message: str
) -> None:
    make_vault(home)
    before = (home / "vault.sp").read_bytes()
    done = run_sp("vault", *args, "--passphrase-file", str(home / "pass"), home=home, stdin=stdin)
    _assert_one_line_failure(done, 2)
    assert message in done.stderr
    assert (home / "vault.sp").read_bytes() == before


def test_no_terminal_and_no_passphrase_file_is_a_usage_error(home: Path) -> None:
    make_vault(home)
    done = run_sp("vault", "list", home=home)
    _assert_one_line_failure(done, 2)
    assert "no terminal to ask for the vault passphrase; pass --passphrase-file" in done.stderr
    both = run_sp(
        "vault", "passphrase", "--passphrase-file", "-", "--new-passphrase-file", "-", home=home
    )
    _assert_one_line_failure(both, 2)


def test_unlock_and_lock_say_honestly_that_no_gateway_holds_the_vault(home: Path) -> None:
    make_vault(home)
    unlocked = run_sp("vault", "unlock", "--passphrase-file", str(home / "pass"), home=home)
    assert unlocked.returncode == 2  # what was asked for, an unlocked vault, does not hold
    assert "passphrase accepted; no gateway is running" in unlocked.stdout
    locked = run_sp("vault", "lock", home=home)
    assert locked.returncode == 0 and "no gateway is running" in locked.stdout


def test_unlock_restores_a_missing_public_file_and_flags_a_swapped_one(
    home: Path, tmp_path: Path
) -> None:
    store, _ = make_vault(home)
    original = store.public_path.read_bytes()
    store.public_path.unlink()
    done = run_sp("vault", "unlock", "--passphrase-file", str(home / "pass"), home=home)
    assert done.returncode == 2 and "rewritten" in done.stdout  # locked at rest all the same
    assert store.public_path.read_bytes() == original
    other = tmp_path / "other"
    other.mkdir(mode=0o700)
    attacker, _ = make_vault(other)
    store.public_path.write_bytes(attacker.public_path.read_bytes())
    status = run_sp("vault", "status", home=home)
    assert "public key file: differs from header" in status.stdout
    done = run_sp("vault", "unlock", "--passphrase-file", str(home / "pass"), home=home)
    _assert_one_line_failure(done, 2)
    assert "does not hold this vault's public keys" in done.stderr
    fixed = run_sp(
        "vault",
        "unlock",
        "--rewrite-public-keys",
        "--passphrase-file",
        str(home / "pass"),
        home=home,
    )
    assert fixed.returncode == 2 and store.public_path.read_bytes() == original


def test_passphrase_change_through_the_cli(home: Path) -> None:
    make_vault(home)
    (home / "new").write_bytes(b"a much newer passphrase\n")
    done = run_sp(
        "vault",
        "passphrase",
        "--passphrase-file",
        str(home / "pass"),
        "--new-passphrase-file",
        str(home / "new"),
        home=home,
    )
    assert done.returncode == 0, done.stderr
    assert "passphrase changed" in done.stdout
    old = run_sp("vault", "list", "--passphrase-file", str(home / "pass"), home=home)
    _assert_one_line_failure(old, 1)
    new = run_sp("vault", "list", "--passphrase-file", str(home / "new"), home=home)
    assert new.returncode == 0 and "deploy-token" in new.stdout
    # Re-derived with the production parameters, whatever the old header said.
    assert (
        json.loads(run_sp("vault", "status", "--json", home=home).stdout)["kdf"]["memory_kib"]
        == 65536
    )


def test_backup_writes_an_encrypted_copy_and_never_overwrites(home: Path, tmp_path: Path) -> None:
    make_vault(home)
    target = tmp_path / "vault-backup.sp"
    done = run_sp("vault", "backup", str(target), home=home)
    assert done.returncode == 0
    assert target.read_bytes() == (home / "vault.sp").read_bytes()
    assert CANARY_TOKEN not in target.read_bytes()
    target.write_bytes(b"something precious")
    again = run_sp("vault", "backup", str(target), home=home)
    _assert_one_line_failure(again, 2)
    assert target.read_bytes() == b"something precious"


def test_vault_commands_refuse_to_edit_the_file_under_a_running_gateway(home: Path) -> None:
    make_vault(home)
    run_dir = home / "run"
    run_dir.mkdir(mode=0o700)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(run_dir / "control.sock"))
    listener.listen(1)
    try:
        done = run_sp(
            "vault",
            "passphrase",
            "--passphrase-file",
            str(home / "pass"),
            "--new-passphrase-file",
            str(home / "pass"),
            home=home,
        )
    finally:
        listener.close()
    _assert_one_line_failure(done, 2)
    assert "a gateway is running" in done.stderr
    # A stale socket file (nobody listening) does not block the file backend.
    stale = run_sp("vault", "list", "--passphrase-file", str(home / "pass"), home=home)
    assert stale.returncode == 0


def test_audit_show_keeps_sealed_bodies_sealed_without_the_passphrase(home: Path) -> None:
    store, _ = make_vault(home)
    audit = home / "audit"
    audit.mkdir(mode=0o700)
    with JournalWriter(audit / "actions.jsonl", sealer=AuditSealer(store.public_keys())) as w:
        w.append("action.intent", {"target": "deploy-api", "marker": "body-marker-93"})
    sealed = run_sp("audit", "show", "--json", home=home)
    assert sealed.returncode == 0
    assert "body-marker-93" not in sealed.stdout and '"sealed"' in sealed.stdout
    table = run_sp("audit", "show", home=home)
    assert "<sealed>" in table.stdout
    opened = run_sp("audit", "show", "--json", "--passphrase-file", str(home / "pass"), home=home)
    assert opened.returncode == 0, opened.stderr
    (record,) = [json.loads(line) for line in opened.stdout.splitlines()]
    assert record["body"] == {"target": "deploy-api", "marker": "body-marker-93"}
    _assert_clean(opened)
    (home / "wrong").write_bytes(b"nope\n")
    wrong = run_sp("audit", "show", "--passphrase-file", str(home / "wrong"), home=home)
    _assert_one_line_failure(wrong, 1)


def test_commands_without_a_vault_say_to_init_and_create_nothing(tmp_path: Path) -> None:
    home = tmp_path / "never-created"
    done = run_sp("vault", "list", "--passphrase-file", "-", home=home, stdin=b"x")
    _assert_one_line_failure(done, 2)
    assert "no vault file at" in done.stderr and "sp vault init" in done.stderr
    assert not home.exists()
    status = run_sp("vault", "status", home=home)
    assert status.returncode == 2 and "state: missing" in status.stdout


def test_the_passphrase_prompt_at_a_terminal_works_and_does_not_echo(home: Path) -> None:
    make_vault(home)
    pid, fd = pty.fork()
    if pid == 0:  # the child: `sp vault list` with a terminal on stdin/stdout
        os.environ["SAFEPORT_HOME"] = str(home)
        os.execv(sys.executable, [sys.executable, "-m", "safeport", "vault", "list"])
    seen = b""
    deadline = time.monotonic() + 30
    sent = False
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break  # the child closed the terminal
        if not chunk:
            break
        seen += chunk
        if not sent and b"passphrase" in seen.lower():
            os.write(fd, PASSPHRASE + b"\n")
            sent = True
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 0, seen
    assert b"deploy-token  token" in seen
    assert PASSPHRASE not in seen  # hidden input is not echoed back
