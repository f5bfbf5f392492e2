"""`sp approvals watch` shows what a yes allows and the time left, clears a card that expires or
is withdrawn, and never lets an answer typed for one card land on another."""

from __future__ import annotations

import io
import json
import select
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.gateway import REPO, AgentProcess, clean_env, wait_until
from safeport.cli.cards.card_text import card_lines
from safeport.shared.launch import sp_command
from tests.cli.test_real_vault_e2e import POLICY, home, sp

__all__ = ["home"]  # the fixture: a real vault holding an ssh key, and gateway.toml

SHORT_POLICY = POLICY.replace("approval_timeout_s = 20", "approval_timeout_s = 4")
PROPOSAL = {"v": 1, "type": "propose", "action": "ssh_exec", "host_id": "nowhere",
            "command_id": "uptime", "args": {}}  # fmt: skip


def test_a_card_reads_at_80_columns_and_long_lines_wrap_under_themselves() -> None:
    body = json.dumps({"image": "registry.example/" + "a" * 120, "replicas": 3}, indent=2)
    card = {
        "id": "c-1",
        "action": "http_request",
        "target": "deploy-api",
        "operation": "deploy",
        "effect": "may change things",
        "credential": "deploy-token",
        "scope_text": "this one request only",
        "expires_in_s": 57,
        "fields": [["request", "POST https://api.example/v1/" + "x" * 90], ["body", body]],
        "requester": [
            {
                "pid": 4,
                "exe": "/usr/bin/node",
                "sha256": "ab" * 32,
                "verified": "dpkg nodejs: matches",
            }
        ],
        "showable": True,
    }
    lines = card_lines(card, width=80)
    assert all(len(line) <= 80 for line in lines)
    text = "\n".join(lines)
    assert lines[0].endswith(" · time left 57 s") and "may change things" in text
    assert "a yes       this one request only" in text
    # The body's long value wraps under its own indentation, each continuation marked in the
    # label column, and none of it is lost.
    value_lines = [line for line in lines if "aaaa" in line]
    assert len(value_lines) > 1
    assert value_lines[0].startswith(" " * 12 + "  ")
    assert all(line.startswith(" " * 10 + "\u21aa " + "    ") for line in value_lines[1:])
    assert "".join(line[12:].strip() for line in value_lines).count("a") >= 120
    assert "dpkg nodejs: matches" in text


def test_a_card_never_shows_a_raw_control_character() -> None:
    card = {"id": "c\x1b[2J", "fields": [["command", "echo \u202eevil\x07"]], "requester": []}
    text = "\n".join(card_lines(card))
    assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text


class Watcher:
    """A real `sp approvals watch` on pipes, read without blocking."""

    def __init__(self, home: Path, columns: int = 80, *, plain: bool = False) -> None:
        mode = ["--plain"] if plain else []
        self.proc = subprocess.Popen(
            sp_command(["approvals", "watch", *mode, "--passphrase-file", str(home / "pw")]),
            cwd=REPO,
            env={**clean_env(home), "COLUMNS": str(columns)},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.seen = ""

    def until(self, text: str, timeout: float = 15) -> str:
        assert isinstance(self.proc.stdout, io.BufferedReader)  # the default bufsize: read1
        deadline = time.monotonic() + timeout
        while text not in self.seen:
            left = deadline - time.monotonic()
            assert left > 0, f"{text!r} not shown; got:\n{self.seen}"
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if ready:
                chunk = self.proc.stdout.read1(4096)
                assert chunk, f"the watcher exited; got:\n{self.seen}"
                self.seen += chunk.decode()
        return self.seen

    def type(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text.encode())
        self.proc.stdin.flush()

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def running(home: Path) -> Iterator[Path]:
    (home / "gateway.toml").write_text(SHORT_POLICY)
    gateway = subprocess.Popen(
        sp_command(["gateway", "run"]), cwd=REPO, env=clean_env(home), stderr=subprocess.DEVNULL
    )
    try:
        wait_until(lambda: sp(home, "gateway", "status").returncode == 0, timeout=20)
        assert sp(home, "vault", "unlock", "--passphrase-file", str(home / "pw")).returncode == 0
        accepted = sp(home, "policy", "accept", "--passphrase-file", str(home / "pw"), "--yes")
        assert accepted.returncode == 0, accepted.stderr
        yield home
    finally:
        sp(home, "gateway", "stop")
        gateway.wait(20)


def test_an_expired_or_withdrawn_card_is_cleared_and_a_late_answer_lands_nowhere(
    running: Path,
) -> None:
    watcher = Watcher(running)
    agent = AgentProcess(running, ["flock", "-s", str(running / "client.lock")])
    try:
        watcher.until("watching for approval cards")
        agent.send({**PROPOSAL, "id": "late"})
        shown = watcher.until("approve? [y/n] (")
        assert "time left" in shown and "this one request only" in shown
        assert " s left; c: the whole chain) " in shown
        # Nobody answers: the gateway's timeout denies, and the prompt says so at once.
        watcher.until("expired: nobody answered in time; nothing runs", timeout=15)
        assert agent.next(10)["error"]["code"] == "timeout"
        # A "y" typed now belongs to no card.
        watcher.type("y\n")
        watcher.until("no card is waiting; that input was ignored")
        # The next card is not approved by it: withdrawn by its requester, it is cleared too.
        earlier, watcher.seen = watcher.seen, ""
        agent.send({**PROPOSAL, "id": "withdrawn"})
        watcher.until("approve? [y/n]", timeout=15)
        agent.send({"v": 1, "id": "c1", "type": "cancel", "target": "withdrawn"})
        watcher.until("was withdrawn by its requester; nothing runs")
        replies = [agent.next(10), agent.next(10)]
        assert {r.get("id") for r in replies} == {"withdrawn", "c1"}
        assert next(r for r in replies if r["id"] == "withdrawn")["error"]["code"] == "denied"
        assert watcher.seen.count("approve? [y/n]") == 1
        assert "approved" not in (earlier + watcher.seen).replace("approve?", "")
        # A key pressed just as a new card appears was meant for the screen before it.
        earlier, watcher.seen = earlier + watcher.seen, ""
        agent.send({**PROPOSAL, "id": "fresh"})
        watcher.until("approve? [y/n]", timeout=15)
        watcher.type("y\n")
        watcher.until("input ignored: this card was just shown")
        time.sleep(1.6)
        watcher.type("n\n")
        watcher.until("denied")
        assert agent.next(10)["error"]["code"] == "denied"
        assert "approved" not in (earlier + watcher.seen).replace("approve?", "")
        agent.exit()
    finally:
        watcher.close()
    assert watcher.proc.stderr is not None
    assert b"Traceback" not in watcher.proc.stderr.read()


def test_a_terminal_too_narrow_to_show_a_card_takes_no_yes(running: Path) -> None:
    # 20 columns: the card's lines would be wider than the terminal, which would wrap them
    # where no mark shows it. The prompt says to widen it, and a yes typed anyway is not taken.
    watcher = Watcher(running, columns=20)
    agent = AgentProcess(running, ["flock", "-s", str(running / "client.lock")])
    try:
        watcher.until("watching for approval cards")
        agent.send({**PROPOSAL, "id": "narrow"})
        shown = watcher.until("approve? [y/n] (")
        assert "widen it" in shown.replace("\n", " ") and "uptime" not in shown
        time.sleep(1.6)
        watcher.type("y\n")
        watcher.until("y ignored: widen the terminal to read the card, then answer")
        # Nobody could answer it: it expires, and nothing ran.
        watcher.until("expired: nobody answered in time; nothing runs", timeout=15)
        assert agent.next(10)["error"]["code"] == "timeout"
        agent.exit()
    finally:
        watcher.close()


def start_gateway(home: Path) -> subprocess.Popen[bytes]:
    gateway = subprocess.Popen(
        sp_command(["gateway", "run"]), cwd=REPO, env=clean_env(home), stderr=subprocess.DEVNULL
    )
    wait_until(lambda: sp(home, "gateway", "status").returncode == 0, timeout=20)
    return gateway


def test_watch_has_no_default_answer_and_survives_a_gateway_restart(running: Path) -> None:
    watcher = Watcher(running)
    agent = AgentProcess(running, ["flock", "-s", str(running / "client.lock")])
    try:
        watcher.until("watching for approval cards")
        agent.send({**PROPOSAL, "id": "empty"})
        watcher.until("approve? [y/n] (", timeout=15)
        time.sleep(1.6)
        watcher.type("\n")  # Enter alone is no answer
        watcher.until("answer y or n")
        assert "denied" not in watcher.seen.split("answer y or n")[-1]
        watcher.type("n\n")
        watcher.until("denied")
        assert agent.next(10)["error"]["code"] == "denied"
        agent.exit()

        # The gateway restarts: the watcher says so and waits; it leaves the new run's vault
        # locked, and registers again by itself once a human has unlocked it.
        assert sp(running, "gateway", "stop").returncode == 0
        watcher.until("the gateway stopped; waiting for it to start again", timeout=20)
        assert watcher.proc.poll() is None
        gateway = start_gateway(running)
        try:
            watcher.until("its vault stays locked until a human runs `sp vault unlock`", 20)
            unlocked = sp(running, "vault", "unlock", "--passphrase-file", str(running / "pw"))
            assert unlocked.returncode == 0, unlocked.stderr
            watcher.until("reconnected to the gateway; watching again", timeout=20)
            agent = AgentProcess(running, ["flock", "-s", str(running / "client.lock")])
            agent.send({**PROPOSAL, "id": "after-restart"})
            watcher.seen = ""
            watcher.until("approve? [y/n] (", timeout=15)
            time.sleep(1.6)
            watcher.type("n\n")
            watcher.until("denied")
            assert agent.next(10)["error"]["code"] == "denied"
            agent.exit()
        finally:
            sp(running, "gateway", "stop")
            gateway.wait(20)
    finally:
        watcher.close()
