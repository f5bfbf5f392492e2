"""safeport runs on Linux only: `sp`, `python -m safeport` and the context server refuse any
other platform in one line, before they read or write anything (and before they import a module
only Linux has)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from safeport.shared.platform_support import UNSUPPORTED_PLATFORM_EXIT, unsupported_platform_reason

SP_SCRIPT = Path(sys.executable).with_name("sp")

# Runs an entry point as its launcher would, on a platform named by argv[1]. On any platform
# but Linux the modules Windows lacks are made unimportable first: the refusal must come
# before anything that needs them.
LAUNCH = r"""
import runpy, sys
platform, kind, target, *args = sys.argv[1:]
if platform != "linux":
    for name in ("fcntl", "grp", "pwd", "resource", "termios"):
        sys.modules[name] = None
    sys.platform = platform
sys.argv = [target, *args]
if kind == "script":
    runpy.run_path(target, run_name="__main__")
else:
    runpy.run_module(target, run_name="__main__", alter_sys=True)
"""

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


def _launch(
    tmp_path: Path, platform: str, kind: str, target: str, *args: str, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    home = tmp_path / "home"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "SAFEPORT_HOME": str(home / "safeport"),
        "XDG_RUNTIME_DIR": str(home / "run"),
        "XDG_STATE_HOME": str(home / "state"),
        "XDG_CONFIG_HOME": str(home / "config"),
    }
    return subprocess.run(
        [sys.executable, "-c", LAUNCH, platform, kind, target, *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )


def _workspace(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "workspace"
    root.mkdir()
    (root / "notes.md").write_text("hello\n")
    passphrase = tmp_path / "passphrase"
    passphrase.write_text("a long enough passphrase for the test\n")
    return root, passphrase


def _entries(root: Path, passphrase: Path) -> list[tuple[str, str, str, list[str]]]:
    """(program name in the message, how it is run, what is run, its arguments)."""
    return [
        ("sp", "script", str(SP_SCRIPT), ["init", "--passphrase-file", str(passphrase)]),
        ("sp", "module", "safeport", ["init", "--passphrase-file", str(passphrase), "--json"]),
        ("sp", "module", "safeport", ["context", "serve", "--root", str(root)]),
        ("safeport context server", "module", "safeport.context_server", ["--root", str(root)]),
    ]


@pytest.mark.parametrize("platform", ["darwin", "win32", "cygwin", "freebsd14", "emscripten"])
def test_every_entry_point_refuses_another_platform_in_one_line_and_writes_nothing(
    tmp_path: Path, platform: str
) -> None:
    root, passphrase = _workspace(tmp_path)
    before = sorted(tmp_path.rglob("*"))
    for program, kind, target, args in _entries(root, passphrase):
        done = _launch(tmp_path, platform, kind, target, *args, stdin=json.dumps(INITIALIZE))
        assert done.returncode == UNSUPPORTED_PLATFORM_EXIT == 2, (target, args, done.stderr)
        if "--json" in args:  # the reply a script reads for any failure
            reply = {"error": unsupported_platform_reason(platform), "exit_code": 2}
            assert json.loads(done.stdout) == reply, (target, args)
        else:
            assert done.stdout == "", (target, args)  # nothing on the MCP stream
        assert done.stderr == f"{program}: {unsupported_platform_reason(platform)}\n"
        assert sorted(tmp_path.rglob("*")) == before, (target, args)  # no state folder, no file


def test_the_refusal_names_the_platform_linux_and_why() -> None:
    for platform in ("darwin", "win32"):
        reason = unsupported_platform_reason(platform)
        assert reason is not None and "\n" not in reason
        assert f"this is {platform}" in reason and "Linux only" in reason
        assert "SO_PEERCRED" in reason and "/proc" in reason and "pidfd" in reason
    assert unsupported_platform_reason("linux") is None


def test_on_linux_the_same_launch_runs_the_command(tmp_path: Path) -> None:
    # The refusal test's launcher and checks, on Linux: sp init writes its state folder, so a
    # refusal that let the command run would be seen.
    _, passphrase = _workspace(tmp_path)
    done = _launch(
        tmp_path, "linux", "script", str(SP_SCRIPT), "init", "--passphrase-file", str(passphrase)
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "home" / "safeport" / "vault.sp").exists()
