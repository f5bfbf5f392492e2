"""At a terminal, `sp vault add` asks the passphrase before the value and asks a wrong one
again without losing the value; `sp vault init` warns about a weak passphrase; no prompt shows
`[]` as a default."""

from __future__ import annotations

import subprocess
from pathlib import Path

from harness.gateway import REPO, clean_env
from safeport.shared.launch import sp_command
from safeport.vault.passphrase import weakness
from safeport.vault.secrets import SecretBytes
from tests.cli.terminal import Terminal

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.cli.credentials.vault"

PASSPHRASE = "correct horse battery staple"


def vault_home(tmp_path: Path) -> Path:
    home = tmp_path / "h"
    home.mkdir(mode=0o700)
    (home / "pw").write_text(PASSPHRASE + "\n")
    done = subprocess.run(
        sp_command(["vault", "init", "--passphrase-file", str(home / "pw")]),
        env=clean_env(home), cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return home


def test_add_asks_the_passphrase_first_and_retries_a_wrong_one(tmp_path: Path) -> None:
    home = vault_home(tmp_path)
    term = Terminal(
        sp_command(["vault", "add", "deploy-token", "--kind", "token"]), clean_env(home)
    )
    first = term.expect("Vault passphrase:")
    assert "Token" not in first  # nothing typed yet would be lost with a wrong passphrase
    term.type("not the passphrase")
    term.expect("Token:")
    term.type("tok-123")
    term.expect("wrong passphrase; try again")
    term.expect("Vault passphrase:", times=2)
    term.type(PASSPHRASE)
    assert term.wait() == 0, term.seen
    assert "added deploy-token (token)" in term.seen
    assert "[]" not in term.seen and "tok-123" not in term.seen
    listed = subprocess.run(
        sp_command(["vault", "list", "--passphrase-file", str(home / "pw")]),
        env=clean_env(home), cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert "deploy-token" in listed.stdout, listed.stderr


def test_three_wrong_passphrases_give_up(tmp_path: Path) -> None:
    home = vault_home(tmp_path)
    term = Terminal(sp_command(["vault", "add", "t", "--kind", "token"]), clean_env(home))
    term.expect("Vault passphrase:")
    term.type("wrong one")
    term.expect("Token:")
    term.type("v")
    for attempt in (2, 3):
        term.expect("try again", times=attempt - 1)
        term.expect("Vault passphrase:", times=attempt)
        term.type("wrong again")
    assert term.wait() == 1
    assert "cannot unlock the vault" in term.seen


def test_init_warns_about_a_weak_passphrase_at_the_prompt(tmp_path: Path) -> None:
    home = tmp_path / "h"
    home.mkdir(mode=0o700)
    term = Terminal(sp_command(["vault", "init"]), clean_env(home))
    term.expect("New vault passphrase:")
    assert "[]" not in term.seen
    term.type("abc")
    term.expect("Repeat for confirmation:")
    term.type("abc")
    assert term.wait() == 0, term.seen
    assert "warning: a weak passphrase (it has 3 characters" in term.seen


def test_weakness_judges_length_repetition_and_common_words() -> None:
    assert weakness(SecretBytes(b"abc")) is not None
    assert weakness(SecretBytes(b"Password1")) == "it is a common password"
    assert weakness(SecretBytes(b"aaaaaaaaaaaaaaaa")) is not None
    assert weakness(SecretBytes(PASSPHRASE.encode())) is None


def test_rotate_takes_the_kind_the_entry_already_has(tmp_path: Path) -> None:
    home = vault_home(tmp_path)
    (home / "v1").write_text("first\n")
    (home / "v2").write_text("second\n")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            sp_command([*args, "--passphrase-file", str(home / "pw")]),
            env=clean_env(home), cwd=REPO, capture_output=True, text=True, timeout=60,
        )  # fmt: skip

    assert (
        run("vault", "add", "api", "--kind", "token", "--value-file", str(home / "v1")).returncode
        == 0
    )
    rotated = run("vault", "rotate", "api", "--value-file", str(home / "v2"))
    assert rotated.returncode == 0, rotated.stderr
    assert "rotated api" in rotated.stdout
    missing = run("vault", "rotate", "nope", "--value-file", str(home / "v2"))
    assert missing.returncode == 2 and "no entry named 'nope'" in missing.stderr
