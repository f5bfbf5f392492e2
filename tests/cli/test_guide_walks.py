"""The first-hour and first-day guides run as written, by a new user in a folder inside a git
repository, with no terminal.

Every command of the two guides' `sh` blocks runs in order (`bash -c`, stdin not a terminal,
HOME a fresh folder, no SAFEPORT_* variable), against one real sshd on 127.0.0.1, a real
gateway, the real Claude Code and Codex CLIs (npm, pinned in package.json), and an agent that
starts the context server exactly as Codex's entry says. What the user already has is set up
first and stands in for the outside world only: `sp` on PATH (the guide's step 1), an `editor`
that appends the guide's policy text, a `pass` that prints the passphrase and token, an SSH key
the server accepts at `~/.ssh/gateway_ed25519` and `~/.ssh/web_ed25519`, the passphrase file
`~/.safeport-pass`, and the repository `~/src/monorepo` with its package `pkg`.

A line runs as written unless SUBSTITUTIONS says otherwise, each with its reason; a line that
cannot run here is listed with the line that runs in its place. A guide that gains a command
runs it (and the walk fails if it fails); an entry that no guide holds any more fails too.
A step marked `needs` waits on an item of the issue "The first week" that lands separately:
while it fails the walk goes on past it and the test ends as an expected failure naming it;
once it passes the test fails until the mark is removed.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.gateway import REPO
from harness.real_sshd import SSHD, Sshd, running_sshd
from safeport.cli.cards.approver_prompt import GRACE_S
from tests.cli.guide_walk import Agent, Line, Watcher, World, guide_lines, toml_block, wait_for
from tests.conftest import need
from tests.test_own_code_only import installed_entry

pytestmark = pytest.mark.integration

PASSPHRASE = "guide walk: a long passphrase nobody types"
TOKEN = "dt-walk-0123456789abcdef0123456789abcdef"
CARD_PROMPT = "approve? [y/n]"
GUIDE_NAMES = ("first-hour.md", "first-day.md")


@dataclass(frozen=True)
class Step:
    run: str = ""
    """What runs instead of the line ({port}, {user}, {host_key}, {folder}, {card} filled in)."""
    why: str = ""
    skip: bool = False
    """Not run at all (`run` names the guide's line that runs in its place, if any)."""
    background: bool = False
    code: int = 0
    shows: tuple[str, ...] = ()
    """Text the output must hold (the end state the guide promises)."""
    needs: int = 0


SCAN = "sp ssh scan 127.0.0.1:{port}"
SCAN_WHY = "the example host is the test's sshd on 127.0.0.1"
PASS = "--passphrase-file ~/.safeport-pass"
SUBSTITUTIONS: dict[str, Step] = {
    # The first hour.
    "pipx install .": Step(
        skip=True,
        why="installs into the user's pipx; `sp` on PATH runs "
        "this checkout's own interpreter instead",
    ),
    'export PATH="$PWD/.venv/bin:$PATH"': Step(skip=True, why="as above: `sp` is on PATH"),
    "sp init": Step(skip=True, run=f"sp init {PASS}", why="asks the passphrase on a terminal"),
    "sp vault add deploy-token --kind token": Step(
        skip=True, run="pass show deploy-token | …", why="asks on a terminal"
    ),
    "sp vault add build-key --kind ssh-key --value-file ~/.ssh/gateway_ed25519": Step(
        skip=True, run=f"… {PASS}", why="asks the passphrase on a terminal"
    ),
    "sp ssh scan build.example.com": Step(run=SCAN, why=SCAN_WHY),
    "sp gateway run": Step(background=True, why="runs until stopped"),
    "sp vault unlock && sp policy accept": Step(
        skip=True, run=f"sp vault unlock {PASS} && …", why="both ask on a terminal"
    ),
    # The starter's own examples are commented out: accepted as written.
    f"sp vault unlock {PASS} && sp policy accept {PASS} --yes": Step(shows=("accepted policy",)),
    "sp client install claude-code --profile agent --root ~/src/app": Step(
        run="sp client install claude-code --profile agent --root {folder}",
        why="~/src/app is the package folder of the test's repository",
    ),
    "sp approvals watch": Step(
        skip=True, run=f"sp approvals watch {PASS}", why="asks the passphrase on a terminal"
    ),
    f"sp approvals watch {PASS}": Step(background=True, code=3, why="runs until its input ends"),
    # The first day.
    "cd ~/src/monorepo/pkg": Step(why="the walk's working folder from here on"),
    "sp client list": Step(shows=("OK",)),
    # Claude Code keys a local-scope entry by the repository's top-level folder.
    "claude mcp list": Step(shows=("safeport:", "✔ Connected")),
    "codex mcp list": Step(shows=("safeport", "enabled")),
    "sp ssh scan web.example.com": Step(run=SCAN, why=SCAN_WHY),
    "sp policy add ssh web --address web.example.com --user deploy --host-key 'ssh-ed25519 AAAA…'"
    " --command 'disk_usage=df -h /'": Step(
        run="sp policy add ssh web --address 127.0.0.1 --port {port} --user {user} "
        "--host-key '{host_key}' --command 'disk_usage=df -h /'",
        why="the test's sshd, its account and the key the scan printed",
    ),
    "sp policy accept": Step(
        skip=True,
        run=f"sp policy accept {PASS} --yes",
        why="asks y/n and the passphrase on a terminal",
    ),
    "sp approvals approve c-7f3a --passphrase-file ~/.safeport-pass": Step(
        run=f"sp approvals approve {{card}} {PASS}", why="the id of the card waiting now"
    ),
    # 0 ok, 1 error, 2 locked or down.
    "sp status": Step(code=2, shows=("locked",)),
}


@pytest.fixture(scope="module")
def sshd() -> Iterator[Sshd]:
    need(SSHD is not None, "OpenSSH sshd is not installed (apt install openssh-server)")
    with running_sshd() as server:
        yield server


def test_every_substitution_names_a_line_of_a_guide() -> None:
    written = {line.command for name in GUIDE_NAMES for line in guide_lines(name)}
    assert set(SUBSTITUTIONS) <= written, set(SUBSTITUTIONS) - written
    for command, step in SUBSTITUTIONS.items():
        assert step.why or step.needs or step.shows or step.code, command


class Walk:
    def __init__(self, world: World, sshd: Sshd) -> None:
        self.world = world
        self.sshd = sshd
        self.cwd = world.folder
        self.fills = {"port": str(sshd.port), "user": sshd.user, "folder": str(world.folder),
                      "host_key": "", "card": ""}  # fmt: skip
        self.waiting: list[str] = []
        self.passing: list[str] = []
        self.gateway: subprocess.Popen[bytes] | None = None
        self.restarted: Agent | None = None
        self.starter = ""

    def line(self, line: Line) -> None:
        step = SUBSTITUTIONS.get(line.command, Step())
        if step.skip:
            return
        command = (step.run or line.command).format(**self.fills)
        if command.startswith("cd "):
            self.cwd = Path(self.world.shell(f"{command} && pwd", self.cwd).stdout.strip())
            assert self.cwd == self.world.folder, self.cwd
            return
        if step.code:
            assert f"exit {step.code}" in line.comment, f"{line.command}: the guide says no code"
        if step.background:
            self.background(line, command, step)
            return
        done = self.world.shell(command, self.cwd)
        output = done.stdout + done.stderr
        print(f"$ {command}\n{output}[exit {done.returncode}]\n")  # shown when the test fails
        ok = done.returncode == step.code and all(text in output for text in step.shows)
        where = f"{line.guide}: `{line.command}`"
        if step.needs:
            found = f"item {step.needs}: {where} (exit {done.returncode})"
            (self.passing if ok else self.waiting).append(found)
            if not ok:
                self.work_around(step.needs)
        else:
            assert ok, f"{where} exited {done.returncode}:\n{output}"
        self.after(line, done.stdout)

    def background(self, line: Line, command: str, step: Step) -> None:
        process = self.world.start(command, self.cwd)
        if command == "sp gateway run":
            self.gateway = process
            wait_for(lambda: self.world.shell("sp gateway status", self.cwd).returncode == 0,
                     "the gateway answers")  # fmt: skip
            return
        watcher = Watcher(process)
        try:
            watcher.until("watching for approval cards")
            if line.guide == "first-day.md":
                self.agent_proposes(watcher)
            assert watcher.end_input() == step.code, watcher.seen
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()

    def after(self, line: Line, stdout: str) -> None:
        if line.command.startswith("sp ssh scan "):
            key = re.search(r"ssh-ed25519 AAAA[\w+/=]+", stdout)
            assert key is not None and key.group(0) == self.sshd.host_key_line, stdout
            self.fills["host_key"] = key.group(0)
            self.write_policy_text()
        elif line.command.startswith("sp init "):
            self.starter = (self.world.home / ".config/safeport/gateway.toml").read_text()
        elif line.command == "sp approvals list":
            assert self.fills["card"] in stdout, stdout
        elif line.command == "sp sessions list":
            assert "build" in stdout, stdout
        elif line.command == "sp vault lock":
            self.lock_ends_everything()

    def write_policy_text(self) -> None:
        text = toml_block("first-hour.md")
        for written, real in (
            ('address = "build.example.com"', f'address = "127.0.0.1"\nport = {self.sshd.port}'),
            ('user = "deploy"', f'user = "{self.sshd.user}"'),
            ('"ssh-ed25519 AAAA…"', f'"{self.fills["host_key"]}"'),
        ):
            assert text.count(written) == 1, written
            text = text.replace(written, real)
        self.world.policy_text.write_text("\n" + text)

    def work_around(self, item: int) -> None:
        """Until the item lands, do by hand what it makes unnecessary, so the walk goes on."""
        if item == 5:
            # The starter's examples, commented out; then accept again.
            path = self.world.home / ".config/safeport/gateway.toml"
            examples = self.starter.index("\n# ---")
            kept = self.starter[:examples] + re.sub(
                r"(?m)^(?!#)(?=\S)", "# ", self.starter[examples:]
            )
            path.write_text(kept + path.read_text()[len(self.starter) :])
            done = self.world.shell(f"sp policy accept {PASS} --yes", self.cwd)
            assert done.returncode == 0, done.stdout + done.stderr

    def agent(self) -> Agent:
        entry = installed_entry("codex", self.world.home, self.world.folder)
        return Agent(entry, self.world.env(), self.world.folder)

    def agent_proposes(self, watcher: Watcher) -> None:
        """One client process: the per-call `disk_usage`, then `uptime` twice (one card for
        the session), each answered `y` in the watch."""
        agent = self.agent()
        try:
            agent.call("ssh_exec", host_id="web", command_id="disk_usage")
            assert "disk_usage" in watcher.until(CARD_PROMPT)
            watcher.answer("y\n", GRACE_S)
            text, error = agent.result()
            assert not error and "Filesystem" in text, text
            agent.call("ssh_exec", host_id="build", command_id="uptime")
            assert "uptime" in watcher.until(CARD_PROMPT)
            watcher.answer("y\n", GRACE_S)
            text, error = agent.result()
            assert not error and "load average" in text, text
            # The session covers this process: no card (an unanswered one would hold the call
            # for the policy's 120 s, past this wait).
            agent.call("ssh_exec", host_id="build", command_id="uptime")
            text, error = agent.result(timeout=60)
            assert not error and "load average" in text, text
            assert CARD_PROMPT not in watcher.seen
        finally:
            agent.close()

    def restarted_client_asks_again(self) -> None:
        """The client starts again (a new process): the same `uptime` asks again."""
        self.restarted = self.agent()
        self.restarted.call("ssh_exec", host_id="build", command_id="uptime")
        self.fills["card"] = wait_for(self.waiting_card, "a card for the restarted client")

    def restarted_client_runs(self) -> None:
        assert self.restarted is not None
        text, error = self.restarted.result()
        assert not error and "load average" in text, text

    def waiting_card(self) -> str:
        done = self.world.shell(f"sp approvals list --json {PASS}", self.cwd)
        cards = json.loads(done.stdout or "[]") if done.returncode == 0 else []
        if isinstance(cards, dict):
            cards = cards.get("cards", [])
        return str(cards[0]["id"]) if cards else ""

    def lock_ends_everything(self) -> None:
        """The restarted client still runs, yet its session is gone and its next proposal is
        refused without a card."""
        assert self.restarted is not None
        listed = self.world.shell("sp sessions list", self.cwd)
        assert listed.stdout.strip() == "no sessions", listed.stdout + listed.stderr
        self.restarted.call("ssh_exec", host_id="build", command_id="uptime")
        text, error = self.restarted.result(timeout=60)
        assert error and "lock" in text, text
        assert self.waiting_card() == ""

    def stop(self) -> None:
        if self.restarted is not None:
            self.restarted.close()
        if self.gateway is not None and self.gateway.poll() is None:
            self.world.shell("sp gateway stop", self.cwd)
            try:
                self.gateway.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.gateway.kill()
                self.gateway.wait()


def test_the_first_hour_then_the_first_day_run_as_written_in_a_git_subfolder(
    tmp_path: Path, sshd: Sshd
) -> None:
    for tool in ("claude", "codex"):
        need((REPO / "node_modules" / ".bin" / tool).exists(), f"{tool} is not installed (npm)")
    world = World(tmp_path, {"safeport": PASSPHRASE, "deploy-token": TOKEN}, sshd.client_key_path)
    walk = Walk(world, sshd)
    try:
        for name in GUIDE_NAMES:
            for line in guide_lines(name):
                if line.command == "sp approvals list":
                    walk.restarted_client_asks_again()
                walk.line(line)
                if line.command.startswith("sp approvals approve "):
                    walk.restarted_client_runs()

    finally:
        walk.stop()
    gateway = walk.gateway
    assert gateway is not None and gateway.returncode == 0
    assert not walk.passing, f"passes now; remove its `needs` mark: {walk.passing}"
    if walk.waiting:
        pytest.xfail(f"waits on: {walk.waiting}")
