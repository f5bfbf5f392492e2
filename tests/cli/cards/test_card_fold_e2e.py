"""The folded card and the whole chain from the real commands: `sp approvals show ID` folds the
chain, `--full` shows every process, `--json` holds it all, and in `sp approvals watch` the
answer `c` shows the card again with the whole chain."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.gateway import AgentProcess, wait_until
from tests.cli.cards.test_approvals_watch import PROPOSAL, Watcher
from tests.cli.running_gateway import running_gateway
from tests.cli.test_real_vault_e2e import POLICY, home, sp

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.cli.cards.approvals"

__all__ = ["home"]  # the fixture: a real vault holding an ssh key, and gateway.toml


@pytest.fixture
def running(home: Path) -> Iterator[Path]:
    """A real gateway, unlocked, serving a policy whose cards wait a minute: long enough for a
    few commands to read one on a loaded machine."""
    (home / "gateway.toml").write_text(
        POLICY.replace("approval_timeout_s = 20", "approval_timeout_s = 60")
    )
    with running_gateway(home):
        accepted = sp(home, "policy", "accept", "--passphrase-file", str(home / "pw"), "--yes")
        assert accepted.returncode == 0, accepted.stderr
        yield home


def _pids(text: str) -> set[int]:
    return {int(pid) for pid in re.findall(r"\bpid (\d+) ", text)}


def _waiting_card(home: Path) -> dict[str, object]:
    found: list[dict[str, object]] = []

    def listed() -> bool:
        found[:] = json.loads(sp(home, "approvals", "list", "--json").stdout or "[]")
        return bool(found)

    wait_until(listed, timeout=15)
    return found[0]


def test_show_folds_the_chain_full_shows_it_whole_and_json_holds_it_all(running: Path) -> None:
    # A deeper chain than the test run's own: wrappers (each flock forks) between the
    # requester and its runner.
    prefix = [word for n in range(4) for word in ("flock", "-s", str(running / f"l{n}.lock"))]
    agent = AgentProcess(running, prefix)
    try:
        agent.send({**PROPOSAL, "id": "deep"})
        card = _waiting_card(running)
        card_id = str(card["id"])
        chain = card["requester"]
        assert isinstance(chain, list) and len(chain) >= 6, chain
        every = {int(process["pid"]) for process in chain}

        shown = sp(running, "approvals", "show", card_id)
        assert shown.returncode == 0, shown.stderr
        lines = shown.stdout.rstrip("\n").splitlines()
        assert all(len(line) <= 80 for line in lines)
        assert "\\u0020" not in shown.stdout
        folded = next(line for line in lines if line.startswith("ancestors "))
        count = int(re.search(r"\+(\d+) ", folded).group(1))  # type: ignore[union-attr]
        assert folded.endswith("--full shows them")
        # Every process is on a row of its own or counted in the fold, none twice.
        assert len(_pids(shown.stdout)) + count == len(every)
        assert _pids(shown.stdout) < every

        full = sp(running, "approvals", "show", card_id, "--full")
        assert full.returncode == 0, full.stderr
        assert _pids(full.stdout) == every
        assert "ancestors" not in full.stdout

        as_json = json.loads(sp(running, "approvals", "show", card_id, "--json").stdout)
        as_json.pop("expires_in_s"), card.pop("expires_in_s")  # counts down meanwhile
        assert as_json == card  # the whole card, every process with its digest

        listed = sp(running, "approvals", "list", "--full")
        assert _pids(listed.stdout) == every

        gone = sp(running, "approvals", "show", "card-000000000000")
        assert gone.returncode == 1
        assert "no card card-000000000000 is waiting" in gone.stderr
    finally:
        agent.exit()


def test_watch_shows_the_whole_chain_on_c_and_then_still_asks(running: Path) -> None:
    watcher = Watcher(running)
    agent = AgentProcess(running, ["nice", "flock", "-s", str(running / "client.lock")])
    try:
        watcher.until("watching for approval cards")
        agent.send({**PROPOSAL, "id": "chain"})
        first = watcher.until("approve? [y/n] (")
        assert "c shows the whole chain" in first or "ancestors" not in first
        assert "sha256" not in first
        time.sleep(1.6)
        watcher.seen = ""
        watcher.type("c\n")
        whole = watcher.until("approve? [y/n] (")
        assert "sha256" in whole and "ancestors" not in whole
        assert str(agent.pid) in whole
        time.sleep(1.6)  # the card was shown again: keys in its first moments are ignored
        watcher.type("n\n")
        watcher.until("denied")
        assert agent.next(10)["error"]["code"] == "denied"
    finally:
        watcher.close()
        agent.exit()
