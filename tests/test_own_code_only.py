"""Opening a repository never runs its code: every command line safeport writes or spawns runs
only the installed safeport, whatever folder it starts in and whatever PYTHONPATH says.

The project folder (also the served root and the working folder) holds a hostile `safeport/`
package, `sitecustomize.py`, `usercustomize.py` and shadows of the dependencies; each records its
own import. Every client entry `sp client install` writes is launched exactly as its client would
launch it, and the service files' command lines and the demo are run from that folder.
"""

from __future__ import annotations

import json
import os
import plistlib
import shlex
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from safeport.context_server.mcp_clients.config_files import CLIENTS, ENTRY_NAME, target_for
from safeport.shared.launch import sp_command
from tests.hostile_folder import HostileFolder

REPO = Path(__file__).resolve().parents[1]


def client_env(home: Path, hostile: HostileFolder) -> dict[str, str]:
    """What a client hands its servers: the user's environment, here with every variable that
    would import from the project folder pointed at it."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "SAFEPORT_HOME": str(home / "sp"),
        "PYTHONPATH": str(hostile.root),
        "PYTHONSTARTUP": str(hostile.root / "sitecustomize.py"),
        "PYTHONUSERBASE": str(hostile.root),
    }


def installed_entry(client: str, home: Path, root: Path) -> dict[str, Any]:
    target = target_for(client, home=home, platform=sys.platform, root=root.resolve())
    text = target.path.read_text()
    data = tomllib.loads(text) if target.format == "toml" else json.loads(text)
    for key in target.key:
        data = data[key]
    entry: dict[str, Any] = data[ENTRY_NAME]
    return entry


async def list_tools(command: str, args: list[str], env: dict[str, str], cwd: Path) -> set[str]:
    params = StdioServerParameters(command=command, args=args, env=env, cwd=cwd)
    with anyio.fail_after(60), open(os.devnull, "w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=30) as client:
            tools = await client.list_tools()
    return {tool.name for tool in tools.tools}


@pytest.mark.parametrize("client", CLIENTS)
def test_every_client_entry_runs_only_installed_code_in_a_hostile_project(
    client: str, home: Path, hostile: HostileFolder
) -> None:
    env = client_env(home, hostile)
    done = subprocess.run(
        sp_command(["client", "install", client, "--root", str(hostile.root)]),
        env=env,
        cwd=hostile.root,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert hostile.ran() == []
    entry = installed_entry(client, home, hostile.root)
    launch_env = {**env, **entry.get("env", {})}
    tools = anyio.run(list_tools, entry["command"], entry["args"], launch_env, hostile.root)
    assert {"read_file", "search_project"} <= tools  # the genuine server answered
    assert hostile.ran() == []


def test_the_old_entry_form_does_run_project_code(home: Path, hostile: HostileFolder) -> None:
    """The attack the entries above withstand: proves the planted folder is live."""
    done = subprocess.run(
        [sys.executable, "-m", "safeport", "context", "serve", "--root", str(hostile.root)],
        env={**client_env(home, hostile), "PYTHONPATH": ""},
        cwd=hostile.root,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0  # the planted __main__ ran instead of the server
    assert {"safeport", "safeport.main"} <= set(hostile.ran())


@pytest.mark.parametrize("kind", ["systemd", "launchd"])
def test_the_service_files_start_only_installed_code(
    kind: str, home: Path, hostile: HostileFolder
) -> None:
    sp_home = home / "sp"
    sp_home.mkdir(mode=0o700)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "SAFEPORT_HOME": str(sp_home)}
    printed = subprocess.run(
        sp_command(["gateway", "run", "--print-service", kind]),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    if kind == "systemd":
        exec_start = next(line for line in printed.splitlines() if line.startswith("ExecStart="))
        argv = shlex.split(exec_start.removeprefix("ExecStart="))
    else:
        argv = plistlib.loads(printed.encode())["ProgramArguments"]
    assert argv[:2] == [sys.executable, "-I"]
    gateway = subprocess.Popen(
        argv, env=env, cwd=hostile.root, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 30
        while not (sp_home / "run" / "control.sock").exists():
            assert gateway.poll() is None, gateway.stderr.read() if gateway.stderr else ""
            assert time.monotonic() < deadline, "the gateway did not start"
            time.sleep(0.1)
        status = subprocess.run(
            sp_command(["gateway", "status", "--json"]),
            env=env,
            cwd=hostile.root,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert status.returncode == 0, status.stderr
        assert json.loads(status.stdout)["pid"] == gateway.pid
    finally:
        gateway.terminate()
        gateway.wait(timeout=20)
    assert hostile.ran() == []


def test_a_copy_of_safeport_on_the_path_refuses_to_start(tmp_path: Path) -> None:
    """The start-up check: genuine code, but not the installed distribution's files."""
    import shutil

    import safeport

    copy = tmp_path / "copy"
    shutil.copytree(Path(safeport.__file__).parent, copy / "safeport")
    for argv in (
        [sys.executable, "-m", "safeport", "context", "serve", "--root", str(tmp_path)],
        [sys.executable, "-m", "safeport", "gateway", "run"],
    ):
        done = subprocess.run(
            argv,
            env={
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "SAFEPORT_HOME": str(tmp_path / "sp"),
            },
            cwd=copy,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2, done.stderr
        assert "is not the installed one" in done.stderr
        assert str(copy / "safeport") in done.stderr
        assert done.stdout == ""  # stdio stays the protocol's


def test_the_context_server_refuses_to_serve_a_folder_that_holds_its_interpreter(
    tmp_path: Path,
) -> None:
    """A `.pth` the agent drops into a venv inside the served folder would run under `-I` too."""
    done = subprocess.run(
        sp_command(["context", "serve", "--root", sys.prefix]),
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "SAFEPORT_HOME": str(tmp_path)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "the agent could change" in done.stderr
    assert done.stdout == ""


def test_the_gateway_notifier_never_runs_a_program_from_the_working_folder(
    hostile: HostileFolder, monkeypatch: pytest.MonkeyPatch
) -> None:
    from safeport.action_gateway.approvals.desktop_notice import notifier_argv

    planted = hostile.root / "notify-send"
    planted.write_text(f"#!/bin/sh\ntouch {hostile.marks}/notify-send\n")
    planted.chmod(0o755)
    monkeypatch.chdir(hostile.root)
    for path in (":", "/nonexistent:", "/nonexistent::/also-not", "."):
        argv = notifier_argv("linux", {"DBUS_SESSION_BUS_ADDRESS": "unix:x", "PATH": path})
        assert argv is None, path
    # The same program on an absolute PATH entry is found: only relative entries are skipped.
    found = notifier_argv(
        "linux", {"DBUS_SESSION_BUS_ADDRESS": "unix:x", "PATH": str(hostile.root)}
    )
    assert found is not None and found[0] == str(planted)
