"""A stopped gateway's vault stays locked until a human unlocks it: a `sp approvals watch` left
running across the stop registers again without unlocking, the journal names the process that
did unlock, and a watch whose input ended stops instead of lingering with the passphrase."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import psutil

from harness.gateway import REPO, clean_env, wait_until
from safeport.shared.launch import sp_command
from tests.cli.cards.test_approvals_watch import Watcher
from tests.cli.running_gateway import running_gateway
from tests.cli.test_real_vault_e2e import PASSPHRASE, home, sp
from tests.conftest import need

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.cli.cards.approvals"

__all__ = ["home"]  # the fixture: a real vault holding an ssh key, and gateway.toml

HELD = "the gateway restarted; its vault stays locked until a human runs `sp vault unlock`"
ENDED = "the input ended, so nobody can answer cards: the watch stops"


def _journal(home: Path) -> list[dict[str, Any]]:
    path = home / "audit" / "sessions.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def _unlocks(home: Path) -> list[dict[str, Any]]:
    """The bodies of the vault.unlocked records, unsealed from the file (the gateway's vault
    is never asked: reading them must not unlock it)."""
    shown = sp(home, "audit", "show", "--journal", "sessions", "--json", "--limit", "1000",
               "--passphrase-file", str(home / "pw"))  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    records = [json.loads(line) for line in shown.stdout.splitlines()]
    return [r["body"] for r in records if r.get("kind") == "vault.unlocked"]


def _vault(home: Path) -> str:
    status = sp(home, "gateway", "status", "--json")
    assert status.returncode == 0, status.stderr
    state: str = json.loads(status.stdout)["vault"]
    return state


def _stays_locked(home: Path, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert _vault(home) == "locked"
        time.sleep(0.2)


def _exits(proc: subprocess.Popen[bytes], timeout: float = 15) -> tuple[int, str]:
    code = proc.wait(timeout)
    assert proc.stderr is not None
    return code, proc.stderr.read().decode()


def test_a_watch_left_running_across_a_stop_never_unlocks_the_next_run(home: Path) -> None:
    # The legitimate start: the gateway is locked, and the watch's first registration unlocks
    # it with the passphrase file, as documented; the journal names the watch as the unlocker.
    with running_gateway(home, unlock=False):
        watcher = Watcher(home, plain=True)
        try:
            watcher.until("watching for approval cards")
            assert _vault(home) == "unlocked"
            first = _unlocks(home)[-1]["by"]
            assert first["op"] == "approver.register"
            assert first["peer"]["chain"][0]["pid"] == watcher.proc.pid
            assert first["peer"]["uid"] >= 0

            # The human stops the gateway ("stop locks the vault") and starts it again.
            assert sp(home, "gateway", "stop").returncode == 0
            watcher.until("the gateway stopped; waiting for it to start again", timeout=20)
            with running_gateway(home, unlock=False):
                # The watch has registered again by now (the gateway answered it): it was
                # refused, and the vault stayed locked through its next attempts.
                watcher.until(HELD, timeout=20)
                assert watcher.proc.poll() is None
                _stays_locked(home, 3.0)
                assert len(_unlocks(home)) == 1
                assert "reconnected" not in watcher.seen

                # A human unlocks: the watch registers again, and the journal says who unlocked.
                done = sp(home, "vault", "unlock", "--passphrase-file", str(home / "pw"))
                assert done.returncode == 0, done.stderr
                watcher.until("reconnected to the gateway; watching again", timeout=20)
                second = _unlocks(home)[-1]["by"]
                assert second["op"] == "vault.unlock"
                assert second["peer"]["chain"][0]["pid"] != watcher.proc.pid
                kinds = [r["kind"] for r in _journal(home)]
                assert kinds.index("approver.started", kinds.index("gateway.stopped")) > (
                    len(kinds) - 1 - kinds[::-1].index("vault.unlocked")
                )
        finally:
            watcher.close()
    text = (home / "audit" / "sessions.jsonl").read_text()
    assert PASSPHRASE not in text


def test_a_watch_stops_with_exit_3_when_its_input_ends(home: Path) -> None:
    with running_gateway(home):
        # Ended while connected: it says so and exits 3.
        watcher = Watcher(home, plain=True)
        watcher.until("watching for approval cards")
        assert watcher.proc.stdin is not None
        watcher.proc.stdin.close()
        code, err = _exits(watcher.proc)
        assert code == 3 and ENDED in err and "Traceback" not in err

        # Ended while waiting for a stopped gateway: it exits without waiting for a restart.
        watcher = Watcher(home, plain=True)
        watcher.until("watching for approval cards")
        assert sp(home, "gateway", "stop").returncode == 0
        watcher.until("the gateway stopped; waiting for it to start again", timeout=20)
        assert watcher.proc.stdin is not None
        watcher.proc.stdin.close()
        code, err = _exits(watcher.proc)
        assert code == 3 and ENDED in err


def test_a_watch_whose_input_ended_before_it_started_never_attaches(home: Path) -> None:
    with running_gateway(home, unlock=False):
        for plain in (["--plain"], []):  # on a pipe, the line mode either way
            ran = subprocess.run(
                sp_command(["approvals", "watch", *plain, "--passphrase-file", str(home / "pw")]),
                cwd=REPO,
                env=clean_env(home),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert ran.returncode == 3 and ENDED in ran.stderr
        assert _vault(home) == "locked"
        assert _unlocks(home) == []
        assert all(r["kind"] != "approver.started" for r in _journal(home))


def test_a_watch_started_with_no_stdin_at_all_never_attaches(home: Path) -> None:
    # `<&-`: descriptor 0 is not open, so the first file or socket opened would take it and be
    # read as typed answers. Nobody can answer: it stops before reading the passphrase.
    with running_gateway(home, unlock=False):
        for plain in (["--plain"], []):
            argv = sp_command(["approvals", "watch", *plain, "--passphrase-file", str(home / "pw")])
            ran = subprocess.run(["sh", "-c", 'exec "$@" <&-', "sh", *argv], cwd=REPO,
                                 env=clean_env(home), capture_output=True, text=True,
                                 timeout=60)  # fmt: skip
            assert ran.returncode == 3 and ENDED in ran.stderr, ran.stderr
            assert "Traceback" not in ran.stderr
        assert _vault(home) == "locked"
        assert all(r["kind"] != "approver.started" for r in _journal(home))


def _tmux(socket: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["tmux", "-L", socket, *args], capture_output=True, text=True,
                          timeout=10, cwd=REPO)  # fmt: skip


def _in_tmux(home: Path, socket: str, argv: list[str]) -> None:
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in clean_env(home).items())
    command = f"env -i {exports} TERM=xterm-256color {shlex.join(argv)}; echo exit=$?; sleep 60"
    started = _tmux(socket, "-f", "/dev/null", "new-session", "-d", "-s", "w", "-x", "110",
                    "-y", "45", command)  # fmt: skip
    assert started.returncode == 0, started.stderr


def _watch_pids(socket: str) -> list[int]:
    pane_pid = int(_tmux(socket, "display", "-p", "-t", "w", "#{pane_pid}").stdout)
    pane = psutil.Process(pane_pid)
    return [p.pid for p in [pane, *pane.children(recursive=True)]
            if "approvals" in p.cmdline() and p.status() != psutil.STATUS_ZOMBIE]  # fmt: skip


def test_on_a_terminal_ctrl_d_stops_the_line_mode_and_a_closed_terminal_ends_the_live_view(
    home: Path, tmp_path: Path
) -> None:
    need(shutil.which("tmux") is not None, "tmux is not installed")
    socket = f"sp-{tmp_path.name[-12:]}"

    def pane() -> str:
        return _tmux(socket, "capture-pane", "-p", "-t", "w").stdout

    with running_gateway(home):
        try:
            # The line mode on a terminal: Ctrl-D ends its input, and it stops with exit 3.
            _in_tmux(home, socket, sp_command(["approvals", "watch", "--plain",
                                               "--passphrase-file", str(home / "pw")]))  # fmt: skip
            wait_until(lambda: "watching for approval cards" in pane(), timeout=30)
            assert _tmux(socket, "send-keys", "-t", "w", "C-d").returncode == 0
            wait_until(lambda: "exit=3" in pane(), timeout=15)
            assert "the watch stops" in pane().replace("\n", "")
            _tmux(socket, "kill-server")
            socket = socket + "-2"  # a server of its own: the first one may still be exiting

            # The live view: the terminal closes under it (a closed window, a dropped ssh
            # session), and it ends rather than linger holding the passphrase.
            _in_tmux(home, socket, sp_command(["approvals", "watch",
                                               "--passphrase-file", str(home / "pw")]))  # fmt: skip
            wait_until(lambda: "gateway: connected" in pane(), timeout=30)
            [watch] = _watch_pids(socket)
            _tmux(socket, "kill-server")
            wait_until(lambda: not psutil.pid_exists(watch)
                       or psutil.Process(watch).status() == psutil.STATUS_ZOMBIE,
                       timeout=15)  # fmt: skip
        finally:
            _tmux(socket, "kill-server")
