"""The requester's client is its MCP host, and approvers in the human's other panes get through.

Pure rules over made-up chains first, then a real tmux server: the host (a Python program, as
many MCP hosts are) runs in one pane with its requester; an approver the requester spawns is
refused, and one typed in another pane of the same tmux server is accepted.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.gateway import PASSPHRASE, POLICY, REPO, Gateway, clean_env, wait_card
from safeport.action_gateway.approvals.approver_rules import ApproverRefused, check_approver
from safeport.action_gateway.identity.model import PeerIdentity, ProcessInfo


def proc(
    pid: int,
    name: str,
    *,
    launcher: bool = False,
    script: str | None = None,
    packaged: bool = True,
) -> ProcessInfo:
    interpreter = name in ("python3", "node", "bash", "sh", "zsh")
    return ProcessInfo(
        pid=pid,
        start_time=pid * 7,
        uid=1000,
        name=name,
        exe=f"/usr/bin/{name}",
        exe_sha256="0" * 64,
        signature="package" if packaged else "not-packaged",
        interpreter=interpreter,
        launcher=launcher,
        script=script,
        script_signature="package" if packaged and script else None,
    )


def peer(*chain: ProcessInfo) -> PeerIdentity:
    return PeerIdentity(uid=1000, gid=1000, chain=chain)


INIT = proc(1, "systemd")
TMUX = proc(50, "tmux")
PANE_SHELL = proc(60, "bash")
HOST = proc(70, "node", script="/usr/lib/node_modules/claude/cli.js")
NPX = proc(80, "node", launcher=True, script="/usr/lib/node_modules/npm/bin/npx-cli.js")
SERVER = proc(90, "python3", script="/home/u/.venv/bin/sp")
REQUESTER = peer(SERVER, NPX, HOST, PANE_SHELL, TMUX, INIT)


def test_the_client_is_the_nearest_host_not_a_wrapper_or_the_multiplexer() -> None:
    assert REQUESTER.client() == HOST
    assert REQUESTER.wrappers() == (NPX,)


def test_an_interpreter_running_a_program_is_a_host() -> None:
    harness = proc(75, "python3", script="/home/u/agent_harness.py")
    assert peer(SERVER, harness, PANE_SHELL, TMUX, INIT).client() == harness


@pytest.mark.parametrize(
    "wrapper",
    [proc(71, "env"), proc(72, "timeout"), proc(73, "setsid"), proc(74, "uvx"), proc(76, "bash")],
)
def test_wrappers_are_skipped(wrapper: ProcessInfo) -> None:
    assert peer(SERVER, wrapper, HOST, TMUX, INIT).client() == HOST


@pytest.mark.parametrize(
    "terminal",
    ["tmux", "screen", "zellij", "gnome-terminal-server", "konsole", "xterm", "kitty", "iTerm2"],
)
def test_a_multiplexer_or_terminal_is_never_the_client(terminal: str) -> None:
    assert peer(SERVER, PANE_SHELL, proc(50, terminal), INIT).client() is None


def test_a_terminal_written_in_python_is_still_a_terminal() -> None:
    terminator = proc(55, "python3", script="/usr/bin/terminator")
    assert peer(SERVER, PANE_SHELL, terminator, INIT).client() is None


@pytest.mark.parametrize("fake", ["tmux", "xterm", "gnome-terminal-server"])
def test_a_program_merely_named_like_a_terminal_does_not_hide_the_host(fake: str) -> None:
    # The agent runs its own copy named like a terminal between the requester and its host.
    impostor = proc(85, fake, packaged=False)
    requester = peer(SERVER, impostor, HOST, PANE_SHELL, TMUX, INIT)
    assert requester.client() == impostor
    # Taken for a terminal, it would have left no client, and an approver it starts would pass.
    with pytest.raises(ApproverRefused, match="client"):
        check_approver(peer(proc(900, "sp"), impostor, HOST), requester, allow_in_client=False)


def test_an_approver_in_another_pane_is_accepted_by_default() -> None:
    other_pane = peer(proc(900, "python3"), proc(61, "bash"), TMUX, INIT)
    check_approver(other_pane, REQUESTER, allow_in_client=False)


def test_approvers_below_the_requester_its_wrappers_or_its_host_are_refused() -> None:
    with pytest.raises(ApproverRefused, match="requesting process"):
        check_approver(peer(proc(900, "sp"), *REQUESTER.chain), REQUESTER, allow_in_client=True)
    with pytest.raises(ApproverRefused, match="launcher"):
        check_approver(peer(proc(900, "sp"), *REQUESTER.chain[1:]), REQUESTER, allow_in_client=True)
    in_host = peer(proc(900, "sp"), proc(901, "bash"), HOST, PANE_SHELL, TMUX, INIT)
    with pytest.raises(ApproverRefused, match="client"):
        check_approver(in_host, REQUESTER, allow_in_client=False)
    check_approver(in_host, REQUESTER, allow_in_client=True)


def test_with_no_client_the_requesters_own_shell_still_refuses() -> None:
    # `sp context serve &` typed in a pane: no host, but the pane's shell is its wrapper.
    bare = peer(SERVER, PANE_SHELL, TMUX, INIT)
    assert bare.client() is None
    with pytest.raises(ApproverRefused, match="launcher"):
        check_approver(peer(proc(900, "sp"), PANE_SHELL, TMUX, INIT), bare, allow_in_client=True)


# -- real tmux -------------------------------------------------------------------------------

HOST_SCRIPT = """
import json, subprocess, sys, time
out = open(sys.argv[1], "a", buffering=1)
req = subprocess.Popen([sys.executable, "-m", "harness.agent_client"],
                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
req.stdout.readline()  # ready
req.stdin.write(sys.argv[2] + "\\n"); req.stdin.flush()
cards = []
while not cards:
    time.sleep(0.05)
    listed = subprocess.run([sys.executable, "-m", "tests.action_gateway.control_client",
                             "approvals.list", "{}"], capture_output=True, text=True).stdout
    cards = json.loads(listed)["result"]["cards"]
decide = json.dumps({"id": cards[0]["id"], "approve": True, "passphrase": sys.argv[3]})
# The requester itself starts an approver: it must be refused.
req.stdin.write(json.dumps({"spawn": [sys.executable, "-m", "tests.action_gateway.control_client",
                                      "approvals.decide", decide]}) + "\\n"); req.stdin.flush()
child = json.loads(req.stdout.readline())["child"]
out.write(json.dumps({"spawned": json.loads(child["out"])}) + "\\n")
out.write(json.dumps({"proposal": json.loads(req.stdout.readline())}) + "\\n")
"""


@pytest.mark.skipif(not shutil.which("tmux"), reason="needs tmux")
def test_real_tmux_another_pane_approves_and_the_requesters_child_cannot(
    gateway: Gateway, tmp_path: Path
) -> None:
    gateway.write_policy(POLICY.replace("approval_timeout_s = 3", "approval_timeout_s = 30"))
    gateway.accept_policy()
    host = tmp_path / "host.py"
    host.write_text(HOST_SCRIPT)
    out, pane2 = tmp_path / "host.out", tmp_path / "pane2.out"
    proposal = json.dumps(
        {
            "v": 1,
            "id": "t1",
            "type": "propose",
            "action": "ssh_exec",
            "host_id": "build-staging",
            "command_id": "read_service_status",
            "args": {"service": "worker"},
        }
    )
    env = {**clean_env(gateway.home), "TERM": "xterm", "SHELL": "/bin/sh"}
    tmux = ["tmux", "-S", str(tmp_path / "tmux.sock"), "-f", "/dev/null"]

    def pane_command(argv: list[str], output: Path) -> str:
        quoted = " ".join(f"'{arg}'" for arg in argv)
        return f"cd '{REPO}' && {quoted} >> '{output}' 2>&1; sleep 60"

    host_argv = [sys.executable, str(host), str(out), proposal, PASSPHRASE]
    subprocess.run(
        [*tmux, "new-session", "-d", "-x", "200", "-y", "50", pane_command(host_argv, out)],
        env=env,
        check=True,
        cwd=REPO,
    )
    try:
        card = wait_card(gateway, timeout=20)
        spawned = json.loads(_lines(out, 1)[0])["spawned"]
        assert spawned["ok"] is False
        assert "inside the requesting process" in spawned["error"]["reason"]
        assert card["client"]["exe"] == _realpath(sys.executable)  # the Python host, not tmux
        decide = json.dumps({"id": card["id"], "approve": True, "passphrase": PASSPHRASE})
        approver = [sys.executable, "-m", "tests.action_gateway.control_client"]
        subprocess.run(
            [*tmux, "split-window", pane_command([*approver, "approvals.decide", decide], pane2)],
            env=env,
            check=True,
        )
        # Each pane's line is waited for: the approver's reply and the host's result are written
        # by two processes, in either order on a loaded machine.
        decided = json.loads(_lines(pane2, 1)[0])
        assert decided["ok"] is True, decided
        result = json.loads(_lines(out, 2)[1])["proposal"]
        assert result["ok"] is True, result
    finally:
        subprocess.run([*tmux, "kill-server"], env=env, check=False)


def _lines(path: Path, count: int, bound_s: float = 60.0) -> list[str]:
    """The first ``count`` whole lines a pane wrote to ``path``, waited for up to ``bound_s``."""
    deadline = time.monotonic() + bound_s
    while True:
        text = path.read_text() if path.exists() else ""
        lines = text.splitlines() if text.endswith("\n") else text.splitlines()[:-1]
        if len(lines) >= count:
            return lines
        if time.monotonic() > deadline:
            raise AssertionError(f"{path.name} holds {len(lines)} of {count} lines: {text!r}")
        time.sleep(0.05)


def _realpath(path: str) -> str:
    return str(Path(path).resolve())
