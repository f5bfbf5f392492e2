"""The live approvals view (Textual), driven headless with Textual's pilot against a real
gateway: the card with its time left, no default answer, a key pressed as a card appears is
ignored, sessions listed and revoked with a key, outcomes shown, and a gateway restart survived.
"""

from __future__ import annotations

import asyncio
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from textual.widgets import DataTable, Static

from harness.gateway import REPO, AgentProcess, clean_env, wait_until
from safeport.cli.cards.approvals_screen import ApprovalsApp
from safeport.gateway_client.approver_thread import ApprovalLink
from safeport.shared.launch import sp_command
from safeport.shared.paths import locate
from safeport.vault.secrets import SecretBytes
from tests.cli.test_real_vault_e2e import PASSPHRASE, POLICY, home, sp
from tests.conftest import need

__all__ = ["home"]

SESSION_POLICY = POLICY.replace('approval = "per-call"', 'approval = "session"')
PROPOSAL = {"v": 1, "type": "propose", "action": "ssh_exec", "host_id": "nowhere",
            "command_id": "uptime", "args": {}}  # fmt: skip


def start_gateway(home: Path, *, unlock: bool = True) -> subprocess.Popen[bytes]:
    gateway = subprocess.Popen(
        sp_command(["gateway", "run"]), cwd=REPO, env=clean_env(home), stderr=subprocess.DEVNULL
    )
    wait_until(lambda: sp(home, "gateway", "status").returncode == 0, timeout=20)
    if unlock:
        assert sp(home, "vault", "unlock", "--passphrase-file", str(home / "pw")).returncode == 0
    return gateway


@pytest.fixture
def running(home: Path) -> Iterator[Path]:
    (home / "gateway.toml").write_text(SESSION_POLICY)
    gateway = start_gateway(home)
    try:
        accepted = sp(home, "policy", "accept", "--passphrase-file", str(home / "pw"), "--yes")
        assert accepted.returncode == 0, accepted.stderr
        yield home
    finally:
        sp(home, "gateway", "stop")
        gateway.wait(20)


def text_of(app: ApprovalsApp, selector: str) -> str:
    return str(app.query_one(selector, Static).render())


async def until(condition: Callable[[], bool], timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        await asyncio.sleep(0.1)


def test_the_live_view_end_to_end(running: Path) -> None:
    asyncio.run(_drive(running))


async def _drive(home: Path) -> None:
    paths = locate(clean_env(home))
    secret = SecretBytes(PASSPHRASE.encode())
    app = ApprovalsApp(lambda tell: ApprovalLink(paths, secret, tell))
    agent = AgentProcess(home, ["flock", "-s", str(home / "client.lock")])
    # A short screen: the card (at least the requester, flock and the test run above them)
    # must go on below its pane however few ancestors the run has, so the PgDn rule is met.
    async with app.run_test(size=(110, 28)) as pilot:
        await until(lambda: text_of(app, "#state") == "gateway: connected")
        await pilot.press("y")
        await until(lambda: "no card is waiting; that key was ignored" in app.outcomes[-1])

        agent.send({**PROPOSAL, "id": "first"})
        await until(lambda: "approve?" in text_of(app, "#card"))
        card = text_of(app, "#card")
        assert "time left" in card and "ssh_exec nowhere / uptime" in card
        assert "no default" in card
        await pilot.press("y")  # at once: meant for the screen before the card
        await until(lambda: "key ignored: this card was just shown" in app.outcomes[-1])
        # One line per process until `c` asks for the whole chain (digests and all).
        assert "sha256" not in text_of(app, "#card") and "c: the whole chain" in card
        await pilot.press("c")
        await until(lambda: "sha256" in text_of(app, "#card"))
        await pilot.press("c")
        await until(lambda: "sha256" not in text_of(app, "#card"))
        await asyncio.sleep(1.6)
        box = app.query_one("#card-box")
        assert app._lines_shown > box.scrollable_content_region.height  # the premise
        await pilot.press("y")  # this card goes on below the pane
        await until(lambda: "PgDn to its end first" in app.outcomes[-1])
        # Paged to its end: the view notes the last row once a refresh has drawn it, which on
        # busy cores can come after the key, so wait for the note rather than a fixed pause.
        for _ in range(8):
            await pilot.press("pagedown")
        await until(lambda: app._seen_whole)
        await pilot.press("y")
        await until(lambda: any("card" in line and ": approved" in line for line in app.outcomes))
        reply = agent.next(15)
        assert reply["id"] == "first"  # it ran (and failed: nothing listens on port 1)
        # What the yes led to is on the card's outcome line, named by its action.
        await until(lambda: any("failed · " in line for line in app.outcomes))
        ran = next(line for line in app.outcomes if "failed · " in line)
        assert "(ssh_exec nowhere / uptime)" in ran

        table = app.query_one("#sessions", DataTable)
        await until(lambda: table.row_count == 1)
        await pilot.press("r")
        await until(lambda: any(": revoked" in line for line in app.outcomes))
        await until(lambda: table.row_count == 0)

        agent.send({**PROPOSAL, "id": "second"})
        await until(lambda: "approve?" in text_of(app, "#card"))
        await asyncio.sleep(1.6)
        await pilot.press("n")
        await until(lambda: any(": denied" in line for line in app.outcomes))
        assert agent.next(15)["error"]["code"] == "denied"
        agent.exit()

        # The gateway restarts: the view says so and waits; it leaves the new run's vault locked
        # and registers again by itself once a human has unlocked it.
        assert sp(home, "gateway", "stop").returncode == 0
        await until(lambda: "stopped — waiting for it to start again" in text_of(app, "#state"))
        gateway = start_gateway(home, unlock=False)
        try:
            await until(lambda: "restarted with its vault locked" in text_of(app, "#state"))
            assert any("stays locked until a human runs" in line for line in app.outcomes)
            assert '"vault": "locked"' in sp(home, "gateway", "status", "--json").stdout
            unlocked = sp(home, "vault", "unlock", "--passphrase-file", str(home / "pw"))
            assert unlocked.returncode == 0, unlocked.stderr
            await until(lambda: text_of(app, "#state") == "gateway: reconnected; watching again")
            again = AgentProcess(home, ["flock", "-s", str(home / "client.lock")])
            again.send({**PROPOSAL, "id": "after-restart"})
            await until(lambda: "approve?" in text_of(app, "#card"))
            await asyncio.sleep(1.6)
            await pilot.press("n")
            assert again.next(15)["error"]["code"] == "denied"
            again.exit()
        finally:
            await pilot.press("q")
            sp(home, "gateway", "stop")
            gateway.wait(20)
    assert app.failure is None


def pane(socket: str, target: str) -> str:
    done = subprocess.run(["tmux", "-L", socket, "capture-pane", "-p", "-t", target],
                          capture_output=True, text=True, timeout=10)  # fmt: skip
    return done.stdout


def test_the_live_view_in_a_real_terminal_under_tmux(running: Path, tmp_path: Path) -> None:
    need(shutil.which("tmux") is not None, "tmux is not installed")
    socket = f"sp-{tmp_path.name[-12:]}"
    env = clean_env(running)
    argv = sp_command(["approvals", "watch", "--passphrase-file", str(running / "pw")])
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    subprocess.run(
        ["tmux", "-L", socket, "-f", "/dev/null", "new-session", "-d", "-s", "w", "-x", "110",
         "-y", "45", f"env -i {exports} TERM=xterm-256color {shlex.join(argv)}"],
        check=True, timeout=10, cwd=REPO,
    )  # fmt: skip
    agent = AgentProcess(running, ["flock", "-s", str(running / "client.lock")])
    try:
        wait_until(lambda: "gateway: connected" in pane(socket, "w"), timeout=30)
        assert "no card is waiting" in pane(socket, "w")
        agent.send({**PROPOSAL, "id": "tmux"})
        # The card's top; its end (and the prompt) may be below the pane, PgDn away.
        wait_until(lambda: "ssh_exec nowhere / uptime" in pane(socket, "w"), timeout=20)
        assert "time left" in pane(socket, "w")
        time.sleep(1.6)
        subprocess.run(["tmux", "-L", socket, "send-keys", "-t", "w", "n"], check=True, timeout=10)
        assert agent.next(15)["error"]["code"] == "denied"
        wait_until(lambda: ": denied" in pane(socket, "w"), timeout=10)
        agent.exit()
        subprocess.run(["tmux", "-L", socket, "send-keys", "-t", "w", "q"], check=True, timeout=10)
        wait_until(lambda: subprocess.run(["tmux", "-L", socket, "has-session", "-t", "w"],
                   capture_output=True).returncode != 0, timeout=10)  # fmt: skip
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, timeout=10)
