"""Help that shows how to run each command, and failures said in the words of the domain."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from harness.gateway import REPO, clean_env, wait_until
from safeport.cli.app import COMMANDS
from safeport.cli.app import sp as sp_group
from safeport.shared.launch import sp_command

# click's generic names; each kind of value has its own word instead (FILE, DIR, N, SECONDS…).
GENERIC_METAVARS = ("PATH", "DIRECTORY", "TEXT", "FLOAT", "INTEGER", "FILENAME")


def commands(group: click.Command, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [path]
    if isinstance(group, click.Group):
        context = click.Context(group)
        for name in group.list_commands(context):
            command = group.get_command(context, name)
            assert command is not None
            found += commands(command, (*path, name))
    return found


def run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        sp_command(list(args)), cwd=REPO, env=clean_env(home), capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip


@pytest.mark.parametrize("path", commands(sp_group), ids=lambda p: " ".join(("sp", *p)))
def test_every_help_has_examples_plain_metavars_and_described_options(
    path: tuple[str, ...],
) -> None:
    done = CliRunner().invoke(sp_group, [*path, "--help"], terminal_width=100)
    assert done.exit_code == 0, done.output
    assert "Examples:\n    sp" in done.output, done.output
    for word in GENERIC_METAVARS:
        assert f" {word}" not in done.output.split("Options:")[-1], (word, done.output)
    command: click.Command | None = sp_group
    for name in path:
        assert isinstance(command, click.Group)
        command = command.get_command(click.Context(command), name)
    assert command is not None
    for param in command.params:
        if isinstance(param, click.Option) and param.name != "help":
            assert param.help, f"{param.opts} has no description"
            if param.name in ("timeout", "limit"):
                assert "SECONDS" in param.help or " N " in param.help, param.help


def test_gateway_stop_with_nothing_running_says_so_and_succeeds(tmp_path: Path) -> None:
    done = run(tmp_path, "gateway", "stop")
    assert done.returncode == 0 and done.stdout.strip() == "gateway: not running"


def test_json_is_printed_even_when_the_command_fails(tmp_path: Path) -> None:
    for args in (("gateway", "status", "--json"), ("policy", "check", "--json")):
        done = run(tmp_path, *args)
        assert done.returncode == 2
        answer = json.loads(done.stdout)
        assert answer["exit_code"] == 2 and answer["error"]
    assert (
        "no gateway is listening"
        in json.loads(run(tmp_path, "gateway", "status", "--json").stdout)["error"]
    )


def test_gateway_run_on_an_empty_home_says_what_to_do_next(tmp_path: Path) -> None:
    home = tmp_path / "h"
    home.mkdir(mode=0o700)
    gateway = subprocess.Popen(
        sp_command(["gateway", "run"]), cwd=REPO, env=clean_env(home),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_until(lambda: run(home, "gateway", "status").returncode == 0, timeout=20)
    finally:
        run(home, "gateway", "stop")
        _, err = gateway.communicate(timeout=20)
    assert "no vault at" in err and "`sp vault init`" in err
    assert "no policy at" in err and "`sp init`" in err


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_prints_the_script_for_each_shell(shell: str) -> None:
    done = CliRunner().invoke(sp_group, ["completion", shell])
    assert done.exit_code == 0 and "_SP_COMPLETE" in done.output


def test_bash_completion_completes_subcommands(tmp_path: Path) -> None:
    env = {**clean_env(tmp_path), "_SP_COMPLETE": "bash_complete", "COMP_WORDS": "sp vau",
           "COMP_CWORD": "1"}  # fmt: skip
    done = subprocess.run(sp_command([]), env=env, capture_output=True, text=True, timeout=60)
    assert "vault" in done.stdout, done.stdout + done.stderr


def test_the_root_help_lines_are_the_commands_own() -> None:
    context = click.Context(sp_group)
    for name, (_, _, short) in COMMANDS.items():
        command = sp_group.get_command(context, name)
        assert command is not None and command.get_short_help_str(limit=500) == short, name


def test_version_and_help_import_no_server_code() -> None:
    """`sp --version`, `--help` and completion load click and the table, nothing heavier."""
    probe = (
        "import sys; from safeport.cli import app; "
        "heavy = [m for m in ('mcp', 'paramiko', 'httpx', 'pydantic', 'cryptography', "
        "'safeport.context_server', 'safeport.action_gateway', 'rich') if m in sys.modules]; "
        "print(heavy)"
    )
    done = subprocess.run([sys.executable, "-I", "-c", probe], capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


@pytest.mark.parametrize(
    ("args", "suggested"),
    [
        (("staus",), "Did you mean 'status'?"),
        (("vaul", "status"), "Did you mean 'vault'?"),
        (("docter",), "Did you mean 'doctor'?"),
        (("vault", "unlok"), "'unlock'"),
        (("gateway", "stp"), "Did you mean 'stop'?"),
        (("audit", "verfy"), "Did you mean 'verify'?"),
    ],
)
def test_a_mistyped_command_is_answered_with_the_close_names(
    tmp_path: Path, args: tuple[str, ...], suggested: str
) -> None:
    done = run(tmp_path, *args)
    assert done.returncode == 2 and suggested in done.stderr, done.stderr


def test_a_name_like_no_command_gets_no_suggestion(tmp_path: Path) -> None:
    done = run(tmp_path, "qqqqqq")
    assert done.returncode == 2 and "No such command 'qqqqqq'." in done.stderr
    assert "Did you mean" not in done.stderr


def test_an_argument_that_may_be_left_out_is_shown_in_brackets() -> None:
    done = CliRunner().invoke(sp_group, ["audit", "verify", "--help"])
    assert "Usage: sp audit verify [OPTIONS] [FILE]\n" in done.output
    required = CliRunner().invoke(sp_group, ["vault", "backup", "--help"])
    assert "Usage: sp vault backup [OPTIONS] FILE\n" in required.output


def test_sp_help_names_every_environment_variable_and_shows_a_command(tmp_path: Path) -> None:
    done = run(tmp_path, "help", "environment")
    assert done.returncode == 0, done.stderr
    for name in ("SAFEPORT_HOME", "SAFEPORT_GATEWAY", "XDG_RUNTIME_DIR", "CODEX_HOME"):
        assert f"\n{name}\n" in done.stdout
    shown = run(tmp_path, "help", "vault", "unlock")
    assert shown.returncode == 0 and "Usage: sp vault unlock [OPTIONS]" in shown.stdout
    wrong = run(tmp_path, "help", "vault", "unlok")
    assert wrong.returncode == 2 and "'unlock'" in wrong.stderr
