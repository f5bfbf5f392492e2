"""`sp policy remove KIND NAME` and `sp policy edit`, run as a person runs them: the starter's
examples, once uncommented, are taken out again without a hand edit until `accept` takes the
file; the editor named by $VISUAL or $EDITOR opens the file (never through a shell) and
`check` reports on what it left."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from safeport.authoring.starter import STARTER_POLICY, uncommented
from tests.cli.cli_runner import run_sp
from tests.cli.running_gateway import running_gateway
from tests.cli.test_real_vault_e2e import sp

PASSPHRASE = "a long enough passphrase for the test"


def _home(tmp_path: Path, name: str = "h") -> Path:
    home = tmp_path / name
    home.mkdir(mode=0o700)
    (home / "pw").write_text(PASSPHRASE + "\n")
    return home


def test_examples_accept_refuses_are_removed_one_command_each_until_it_accepts(
    tmp_path: Path,
) -> None:
    home = _home(tmp_path)
    assert sp(home, "init", "--passphrase-file", str(home / "pw")).returncode == 0
    policy = home / "gateway.toml"
    policy.write_text(uncommented(policy.read_text()))
    pw = str(home / "pw")
    with running_gateway(home):
        refused = sp(home, "policy", "accept", "--passphrase-file", pw, "--yes")
        assert refused.returncode == 1 and "not accepted" in refused.stderr
        for kind, name in (
            ("ssh", "staging"),
            ("credential", "staging-key"),
            ("operation", "deploy-api/create_issue"),
            ("http", "deploy-api"),
            ("credential", "deploy-token"),
        ):
            done = sp(home, "policy", "remove", kind, name)
            assert done.returncode == 0, done.stdout + done.stderr
        accepted = sp(home, "policy", "accept", "--passphrase-file", pw, "--yes")
        assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert policy.read_text().startswith(STARTER_POLICY[: STARTER_POLICY.index("# --- Example")])
    assert "# --- Example: one SSH host" in policy.read_text()  # the comments stay


def test_remove_says_what_it_removed_and_what_it_left_unused(tmp_path: Path) -> None:
    home = _home(tmp_path)
    (home / "gateway.toml").write_text(uncommented(STARTER_POLICY))
    done = run_sp("policy", "remove", "ssh", "staging", home=home)
    assert done.returncode == 0, done.stderr
    assert 'removed ssh host "staging"' in done.stdout
    assert "`sp policy remove credential staging-key`" in done.stdout
    inventory = json.loads(run_sp("policy", "check", "--json", home=home).stdout)
    assert inventory["ssh_hosts"] == [] and len(inventory["http_services"]) == 1


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("credential", "deploy-token"), 'used by https service "deploy-api"'),
        (("ssh", "nowhere"), 'declares no ssh host "nowhere"'),
        (("command", "staging"), "as HOST/COMMAND"),
    ],
)
def test_a_refused_removal_leaves_the_file_as_it_was(
    tmp_path: Path, args: tuple[str, str], said: str
) -> None:
    home = _home(tmp_path)
    text = uncommented(STARTER_POLICY)
    (home / "gateway.toml").write_text(text)
    done = run_sp("policy", "remove", *args, home=home)
    assert done.returncode == 2 and said in done.stderr, done.stderr
    assert (home / "gateway.toml").read_text() == text


def _editor(tmp_path: Path, body: str) -> str:
    """An $EDITOR value: a small program run on the file, as an editor would be."""
    script = tmp_path / "editor script.py"  # a space: the value is split as a shell splits it
    script.write_text(f"import sys\nfrom pathlib import Path\npath = Path(sys.argv[1])\n{body}\n")
    return shlex.join([sys.executable, str(script)])


def _edit(home: Path, editor: str, *, variable: str = "EDITOR") -> tuple[int, str, str]:
    # The other variable unset: $VISUAL, when set, comes first.
    other = "EDITOR" if variable == "VISUAL" else "VISUAL"
    done = run_sp("policy", "edit", home=home, prefix=("env", "-u", other, f"{variable}={editor}"))
    return done.returncode, done.stdout, done.stderr


def test_edit_opens_the_editor_then_checks_what_it_saved(tmp_path: Path) -> None:
    home = _home(tmp_path)
    (home / "gateway.toml").write_text(STARTER_POLICY)
    body = "path.write_text(path.read_text().replace('= 120', '= 90'))"
    code, out, err = _edit(home, _editor(tmp_path, body))
    assert code == 0, out + err
    assert f"{home / 'gateway.toml'} saved; checking it:" in out
    assert "gateway.toml is valid" in out
    assert "approval_timeout_s = 90" in (home / "gateway.toml").read_text()
    code, out, _ = _edit(home, _editor(tmp_path, "pass"), variable="VISUAL")
    assert code == 0 and "unchanged; checking it:" in out


def test_edit_reports_what_check_finds_with_its_exit_code(tmp_path: Path) -> None:
    home = _home(tmp_path)
    (home / "gateway.toml").write_text(STARTER_POLICY)
    problem = "path.write_text(uncomment(path.read_text()).replace('AAAAC3', 'AAAAC4'))"
    body = f"from safeport.authoring.starter import uncommented as uncomment\n{problem}"
    code, out, _ = _edit(home, _editor(tmp_path, body))
    assert code == 1 and "pinned key 1" in out and "fix:" in out
    unknown = "path.write_text(path.read_text() + '\\n[gateway.extra]\\n')"
    code, out, err = _edit(home, _editor(tmp_path, unknown))
    assert code == 2 and "saved; checking it:" in out and "extra" in err


def test_the_editor_runs_without_a_shell_so_a_path_is_never_code(tmp_path: Path) -> None:
    home = _home(tmp_path, "h $(touch pwned)")
    (home / "gateway.toml").write_text(STARTER_POLICY)
    code, out, err = _edit(home, _editor(tmp_path, "path.write_text(path.read_text() + '#\\n')"))
    assert code == 0, out + err
    assert not list(tmp_path.rglob("pwned")) and not Path("pwned").exists()
    assert (home / "gateway.toml").read_text().endswith("#\n")


def test_edit_with_no_editor_and_no_terminal_names_the_variable_and_changes_nothing(
    tmp_path: Path,
) -> None:
    home = _home(tmp_path)
    (home / "gateway.toml").write_text(STARTER_POLICY)
    done = run_sp("policy", "edit", home=home, prefix=("env", "-u", "EDITOR", "-u", "VISUAL"))
    assert done.returncode == 2 and "EDITOR" in done.stderr, done.stderr
    assert (home / "gateway.toml").read_text() == STARTER_POLICY
    failing = _editor(tmp_path, "sys.exit(3)")
    code, _, err = _edit(home, failing)
    assert code == 2 and "exited with status 3" in err


def test_an_editor_value_that_names_no_program_never_runs_the_policy_file(tmp_path: Path) -> None:
    home = _home(tmp_path)
    marker = tmp_path / "policy-ran"
    policy = home / "gateway.toml"
    policy.write_text(f"#!/bin/sh\ntouch {shlex.quote(str(marker))}\n" + STARTER_POLICY)
    policy.chmod(0o700)
    for blank in (" ", "\t", "''"):
        code, _, err = _edit(home, blank, variable="VISUAL")
        assert code == 2 and "names no program" in err, err
    assert not marker.exists()


def test_a_bare_editor_name_is_never_found_in_the_current_folder(tmp_path: Path) -> None:
    home = _home(tmp_path)
    (home / "gateway.toml").write_text(STARTER_POLICY)
    project, marker = tmp_path / "project", tmp_path / "planted-ran"
    project.mkdir()
    planted = project / "planted-editor"
    planted.write_text(f"#!/bin/sh\ntouch {shlex.quote(str(marker))}\n")
    planted.chmod(0o755)
    for path in (".:/usr/bin:/bin", ":/usr/bin:/bin", "/usr/bin:/bin:"):
        done = run_sp(
            "policy", "edit", home=home,
            prefix=("env", "-u", "VISUAL", "-C", str(project), f"PATH={path}",
                    "EDITOR=planted-editor"),
        )  # fmt: skip
        assert done.returncode == 2 and "not on PATH" in done.stderr, done.stderr
    assert not marker.exists()


def test_the_editor_gets_an_absolute_path_and_starts_in_its_folder(tmp_path: Path) -> None:
    # A relative HOME (here one that reads as an option) makes every derived path relative.
    home = tmp_path / "-c-home"
    config = home / ".config" / "safeport"
    config.mkdir(parents=True)
    (config / "gateway.toml").write_text(STARTER_POLICY)
    seen = tmp_path / "seen.json"
    body = (
        f"import json, os\nPath({str(seen)!r}).write_text(json.dumps([sys.argv[1:], os.getcwd()]))"
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": "-c-home", "EDITOR": _editor(tmp_path, body)}
    done = subprocess.run(
        [sys.executable, "-m", "safeport", "policy", "edit"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, input="",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    argv, cwd = json.loads(seen.read_text())
    assert argv == [str(config / "gateway.toml")] and Path(cwd) == config
