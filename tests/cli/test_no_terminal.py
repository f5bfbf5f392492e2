"""A command that would have to ask with nobody at a terminal to answer stops before it changes
or shows anything, names every flag that answers its questions, and with those flags does the
whole job: `sp init`, `sp policy accept`, `sp policy add`, `sp demo`."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from harness.gateway import clean_env
from safeport.shared.launch import sp_command
from tests.cli.cli_runner import run_sp
from tests.cli.running_gateway import running_gateway
from tests.cli.terminal import Terminal
from tests.cli.test_real_vault_e2e import POLICY, home, sp

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.cli"

__all__ = ["home"]

# Piped input is not a terminal, whatever it holds: an answer in it is not taken as typed.
PIPED = [b"", b"\n", b"y\n", b"a long enough passphrase for the test\n"]


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(folder)): path.read_bytes() if path.is_file() else b"<dir>"
        for path in sorted(folder.rglob("*"))
    }


@pytest.mark.parametrize("stdin", PIPED)
def test_init_without_a_terminal_writes_nothing_and_names_the_passphrase_flag(
    tmp_path: Path, stdin: bytes
) -> None:
    sp_home = tmp_path / "h"
    sp_home.mkdir(mode=0o700)
    done = run_sp("init", home=sp_home, stdin=stdin)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "no terminal" in done.stderr and "--passphrase-file" in done.stderr
    assert _tree(sp_home) == {}  # no template, no vault, no folder: nothing half done
    assert done.stdout == ""


def test_init_with_the_passphrase_flag_does_the_whole_job(tmp_path: Path) -> None:
    sp_home = tmp_path / "h"
    sp_home.mkdir(mode=0o700)
    (tmp_path / "pw").write_text("a long enough passphrase for the test\n")
    done = run_sp("init", "--passphrase-file", str(tmp_path / "pw"), home=sp_home)
    assert done.returncode == 0, done.stderr
    for name in ("gateway.toml", "context.toml", "vault.sp", "vault.pub.json"):
        assert (sp_home / name).is_file(), name


def test_init_asks_nothing_when_the_vault_exists_so_needs_no_flag(tmp_path: Path) -> None:
    sp_home = tmp_path / "h"
    sp_home.mkdir(mode=0o700)
    (tmp_path / "pw").write_text("a long enough passphrase for the test\n")
    made = run_sp("vault", "init", "--passphrase-file", str(tmp_path / "pw"), home=sp_home)
    assert made.returncode == 0, made.stderr
    vault = (sp_home / "vault.sp").read_bytes()
    done = run_sp("init", home=sp_home, stdin=b"")
    assert done.returncode == 0, done.stderr
    assert (sp_home / "gateway.toml").is_file() and (sp_home / "context.toml").is_file()
    assert (sp_home / "vault.sp").read_bytes() == vault


def _served(home: Path) -> bool:
    return bool(json.loads(sp(home, "policy", "check", "--json").stdout)["served"])


@pytest.mark.parametrize("stdin", ["", "y\n", "yes\n"])
def test_accept_without_a_terminal_names_yes_and_shows_and_serves_nothing(
    home: Path, stdin: str
) -> None:
    pw = str(home / "pw")
    with running_gateway(home):
        done = sp(home, "policy", "accept", "--passphrase-file", pw, stdin=stdin)
        assert done.returncode == 2, done.stdout + done.stderr
        assert "no terminal" in done.stderr and "--yes" in done.stderr
        assert "--passphrase-file" not in done.stderr  # that question has its answer
        assert done.stdout == ""  # stopped before the diff, not at its end
        assert not _served(home)
        accepted = sp(home, "policy", "accept", "--passphrase-file", pw, "--yes", stdin=stdin)
        assert accepted.returncode == 0, accepted.stderr
        assert "+[ssh.hosts.nowhere]" in accepted.stdout.splitlines()
        assert _served(home)


def test_accept_without_a_terminal_names_every_missing_flag_at_once(home: Path) -> None:
    with running_gateway(home):
        both = sp(home, "policy", "accept", stdin="")
        assert both.returncode == 2 and both.stdout == ""
        assert "--yes" in both.stderr and "--passphrase-file" in both.stderr
        passphrase = sp(home, "policy", "accept", "--yes", stdin="x\n")
        assert passphrase.returncode == 2 and passphrase.stdout == ""
        assert "--passphrase-file" in passphrase.stderr and "--yes" not in passphrase.stderr
        assert not _served(home)
        # `-` reads the passphrase from stdin: the flag answers the question, the pipe holds it.
        piped = (home / "pw").read_text()
        done = sp(home, "policy", "accept", "--yes", "--passphrase-file", "-", stdin=piped)
        assert done.returncode == 0, done.stderr
        assert _served(home)


def _plain(seen: str) -> list[str]:
    return re.sub(r"\x1b\[[0-9;]*m", "", seen).splitlines()


def test_end_of_input_at_the_accept_prompt_names_yes_and_serves_nothing(home: Path) -> None:
    with running_gateway(home):
        argv = sp_command(["policy", "accept", "--passphrase-file", str(home / "pw")])
        term = Terminal(argv, clean_env(home))
        term.expect("serve this policy? [y/N]:")
        os.write(term.master, b"\x04")  # Ctrl-D: the input ends with no answer
        assert term.wait() == 2, term.seen
        lines = _plain(term.seen)
        assert "+[ssh.hosts.nowhere]" in lines  # the diff was shown before the question
        assert any("no answer" in line and "--yes" in line for line in lines), lines
        assert not _served(home)


def test_no_at_the_accept_prompt_serves_nothing_and_yes_serves(home: Path) -> None:
    with running_gateway(home):
        argv = sp_command(["policy", "accept", "--passphrase-file", str(home / "pw")])
        refused = Terminal(argv, clean_env(home))
        refused.expect("serve this policy? [y/N]:")
        refused.type("n")
        assert refused.wait() == 2 and "not accepted" in refused.seen
        assert not _served(home)
        agreed = Terminal(argv, clean_env(home))
        agreed.expect("serve this policy? [y/N]:")
        agreed.type("y")
        assert agreed.wait() == 0, agreed.seen
        assert _served(home)


def test_policy_add_without_a_terminal_names_every_missing_flag_and_writes_nothing(
    tmp_path: Path,
) -> None:
    sp_home = tmp_path / "h"
    sp_home.mkdir(mode=0o700)
    (sp_home / "gateway.toml").write_text(POLICY)
    done = run_sp("policy", "add", "ssh", "box", "--address", "h", home=sp_home, stdin=b"x\n")
    assert done.returncode == 2
    for flag in ("--user", "--host-key", "--command"):
        assert flag in done.stderr, done.stderr
    assert "--address" not in done.stderr
    assert (sp_home / "gateway.toml").read_text() == POLICY
    service = run_sp("policy", "add", "http", "api", home=sp_home, stdin=b"")
    assert service.returncode == 2
    assert "--base-url" in service.stderr and "--operation" in service.stderr
    assert (sp_home / "gateway.toml").read_text() == POLICY


@pytest.mark.parametrize("stdin", [b"", b"y\n"])
def test_the_demo_without_a_terminal_names_yes_and_starts_nothing(
    tmp_path: Path, stdin: bytes
) -> None:
    temp = tmp_path / "t"
    temp.mkdir()
    env = {key: value for key, value in os.environ.items() if not key.startswith("SAFEPORT_")}
    env["TMPDIR"] = str(temp)
    done = subprocess.run(
        sp_command(["demo"]), input=stdin, capture_output=True, env=env, timeout=60
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert b"--yes" in done.stderr and b"no terminal" in done.stderr
    assert list(temp.iterdir()) == []  # no throwaway home, no gateway was started


def _vault(tmp_path: Path) -> tuple[Path, Path]:
    sp_home = tmp_path / "h"
    sp_home.mkdir(mode=0o700)
    pw = tmp_path / "pw"
    pw.write_text("a long enough passphrase for the test\n")
    made = run_sp("vault", "init", "--passphrase-file", str(pw), home=sp_home)
    assert made.returncode == 0, made.stderr
    return sp_home, pw


@pytest.mark.parametrize(
    ("args", "named", "not_named"),
    [
        (("add", "t", "--kind", "token"), ("--passphrase-file", "--value-file"), ()),
        (("add", "b", "--kind", "basic", "--username", "u"), ("--value-file",), ()),
        (("rotate", "t"), ("--passphrase-file", "--value-file"), ()),
        (("passphrase",), ("--passphrase-file", "--new-passphrase-file"), ()),
        (("passphrase", "--passphrase-file", "PW"), ("--new-passphrase-file",), ("FILE (-",)),
        (("add", "t", "--kind", "token", "--value-file", "-"), ("--passphrase-file",), ("value",)),
    ],
)
def test_vault_changes_without_a_terminal_name_every_missing_flag_and_change_nothing(
    tmp_path: Path, args: tuple[str, ...], named: tuple[str, ...], not_named: tuple[str, ...]
) -> None:
    sp_home, pw = _vault(tmp_path)
    before = _tree(sp_home)
    args = tuple(str(pw) if arg == "PW" else arg for arg in args)
    if args[0] == "add" and "--username" in args:
        args = (*args, "--passphrase-file", str(pw))
    done = run_sp("vault", *args, home=sp_home, stdin=b"piped, not typed\n")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "no terminal" in done.stderr
    for flag in named:
        assert flag in done.stderr, done.stderr
    for word in not_named:
        assert word not in done.stderr, done.stderr
    assert _tree(sp_home) == before


def test_vault_add_and_passphrase_with_their_flags_complete(tmp_path: Path) -> None:
    sp_home, pw = _vault(tmp_path)
    added = run_sp(
        "vault", "add", "t", "--kind", "token", "--passphrase-file", str(pw),
        "--value-file", "-", home=sp_home, stdin=b"tok-123\n",
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    new = tmp_path / "new"
    new.write_text("another long enough passphrase\n")
    changed = run_sp(
        "vault", "passphrase", "--passphrase-file", str(pw), "--new-passphrase-file", str(new),
        home=sp_home,
    )  # fmt: skip
    assert changed.returncode == 0, changed.stderr
