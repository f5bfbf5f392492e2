"""Two humans served by one dedicated gateway: each card says who asks, and one human cannot
see the other's cards, end their work or stop the gateway without the passphrase.

Real accounts (useradd), the real gateway under its own account (setpriv), every human step
through `sp` under the human's uid; a proposal comes from a raw agent.sock client of alice's.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.action_gateway.dedicated import (
    PASSPHRASE,
    POLICY,
    DedicatedSetup,
    Human,
    install,
    make_setup,
    missing_parts,
    propose,
    setpriv,
    tear_down,
    unique,
)
from tests.conftest import need

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def setup() -> Iterator[DedicatedSetup]:
    missing = missing_parts()
    need(not missing, f"{', '.join(missing)}: needed for real OS accounts")
    made = make_setup([unique("spal"), unique("spbo")])
    try:
        alice, bob = made.humans.values()
        done = install(made, alice.name, bob.name)
        assert done.returncode == 0, done.stdout + done.stderr
        for human in (alice, bob):
            human.write("pw", PASSPHRASE + "\n")
        alice.write(".config/safeport/gateway.toml", POLICY)
        made.start_gateway()
        pw = str(alice.passphrase_file)
        created = alice.sp("vault", "init", "--passphrase-file", pw)
        assert created.returncode == 0, created.stdout + created.stderr
        accepted = alice.sp("policy", "accept", "--yes", "--passphrase-file", pw)
        assert accepted.returncode == 0, accepted.stdout + accepted.stderr
        yield made
    finally:
        tear_down(made)


def _humans(setup: DedicatedSetup) -> tuple[Human, Human]:
    alice, bob = setup.humans.values()
    return alice, bob


def _cards(human: Human, *extra: str) -> list[dict[str, Any]]:
    listed = human.sp("approvals", "list", "--json", *extra)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    return list(json.loads(listed.stdout or "[]"))


def _wait_card(human: Human, *extra: str) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        cards = _cards(human, *extra)
        if cards:
            return cards[0]
        time.sleep(0.2)
    raise AssertionError("no card appeared")


def test_a_card_names_the_human_who_asked_and_only_a_proven_approver_sees_anothers(
    setup: DedicatedSetup,
) -> None:
    alice, bob = _humans(setup)
    proposer = propose(setup, alice)
    try:
        own = _wait_card(alice)  # alice sees her own card without the passphrase
        assert own["user"] == {"uid": alice.uid, "name": alice.name}
        # bob, admitted but without the passphrase, is shown none of alice's cards (nor the
        # facts about her processes they carry).
        assert _cards(bob) == []
        proven = _wait_card(bob, "--passphrase-file", str(bob.passphrase_file))
        assert proven["id"] == own["id"] and proven["user"]["name"] == alice.name
        text = bob.sp("approvals", "list", "--passphrase-file", str(bob.passphrase_file))
        assert f"asked by    {alice.name} (uid {alice.uid})" in text.stdout, text.stdout
        denied = bob.sp("approvals", "deny", own["id"],
                        "--passphrase-file", str(bob.passphrase_file))  # fmt: skip
        assert denied.returncode == 0, denied.stdout + denied.stderr
    finally:
        proposer.kill()
        proposer.wait()


def test_a_proof_for_locking_or_revoking_leaves_a_locked_vault_locked(
    setup: DedicatedSetup,
) -> None:
    # The passphrase is authority for the lock or the revocation, not an unlock: a scripted or
    # left-over command with the passphrase file never unlocks a vault a human locked.
    alice, bob = _humans(setup)
    pw = str(bob.passphrase_file)
    locked = bob.sp("vault", "lock", "--passphrase-file", pw)
    assert locked.returncode == 0, locked.stdout + locked.stderr

    def vault() -> str:
        state: str = json.loads(alice.sp("vault", "status", "--json").stdout)["holder"]
        return state

    assert "unlocked" not in vault()
    for command in (("vault", "lock"), ("sessions", "revoke", "s-0")):
        bob.sp(*command, "--passphrase-file", pw)
        assert "unlocked" not in vault(), command
    # Nor does registering to see the other human's cards (it is refused while locked).
    listed = bob.sp("approvals", "list", "--passphrase-file", pw)
    assert listed.returncode != 0 and "sp vault unlock" in listed.stderr, listed.stderr
    assert "unlocked" not in vault()
    # A wrong passphrase is still refused: the check ran, only the unlock did not.
    wrong = bob.write("wrong", "not the passphrase\n")
    refused = bob.sp("vault", "lock", "--passphrase-file", str(wrong))
    assert refused.returncode != 0
    unlocked = alice.sp("vault", "unlock", "--passphrase-file", str(alice.passphrase_file))
    assert unlocked.returncode == 0, unlocked.stdout + unlocked.stderr
    assert "unlocked" in vault()


def test_locking_and_stopping_need_the_passphrase_when_several_humans_are_served(
    setup: DedicatedSetup,
) -> None:
    alice, bob = _humans(setup)
    unlocked = alice.sp("vault", "unlock", "--passphrase-file", str(alice.passphrase_file))
    assert unlocked.returncode == 0, unlocked.stdout + unlocked.stderr
    # No passphrase (stdin is not a terminal, and the empty file is no passphrase).
    empty = bob.write("empty", "")
    for command in (("vault", "lock"), ("gateway", "stop"), ("sessions", "revoke", "s-0")):
        refused = bob.sp(*command, "--passphrase-file", str(empty))
        assert refused.returncode != 0, command
    # The gateway itself refuses, whatever the client does (a session of no one's is not bob's).
    for op, params in (
        ("vault.lock", {}),
        ("gateway.stop", {}),
        ("sessions.revoke", {"id": "s-0"}),
    ):
        raw = bob.python(
            "import json,socket,struct,sys\n"
            "s=socket.socket(socket.AF_UNIX);s.settimeout(10);s.connect(sys.argv[1])\n"
            "m={'v':1,'id':'c1','type':'control','op':sys.argv[2],'params':json.loads(sys.argv[3])}\n"
            "m=json.dumps(m).encode()\n"
            "s.sendall(struct.pack('>I',len(m))+m)\n"
            "n=struct.unpack('>I',s.recv(4))[0];print(s.recv(n).decode())\n",
            str(setup.run_dir / "control.sock"),
            op,
            json.dumps(params),
        )
        reply = json.loads(raw.stdout)
        assert reply["ok"] is False and "passphrase" in json.dumps(reply), (op, raw.stdout)
    status = json.loads(alice.sp("vault", "status", "--json").stdout)
    assert "unlocked" in status["holder"]
    assert setup.gateway is not None and setup.gateway.poll() is None
    # The human who proves the passphrase still locks and stops as before.
    locked = bob.sp("vault", "lock", "--passphrase-file", str(bob.passphrase_file))
    assert locked.returncode == 0 and "vault locked" in locked.stdout, locked.stderr
    stopped = alice.sp("gateway", "stop", "--passphrase-file", str(alice.passphrase_file))
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert setup.gateway.wait(20) == 0
    setup.gateway = None


_HOLD = (
    "import socket,sys,time\n"
    "s=[socket.socket(socket.AF_UNIX) for _ in range(int(sys.argv[2]))]\n"
    "[x.connect(sys.argv[1]) for x in s]\n"
    "print('held',flush=True);time.sleep(120)\n"
)


def test_one_humans_flood_leaves_the_other_human_their_share_of_cards_and_connections(
    setup: DedicatedSetup,
) -> None:
    """alice's agent runs more waiting requesters than the whole card limit and holds more
    agent.sock connections than the whole budget; bob's proposal still gets a card, which bob
    sees (without the passphrase) and denies."""
    alice, bob = _humans(setup)
    started = setup.gateway is not None and setup.gateway.poll() is None
    if not started:
        setup.start_gateway()
    pw = str(alice.passphrase_file)
    assert alice.sp("vault", "unlock", "--passphrase-file", pw).returncode == 0
    flood = [propose(setup, alice) for _ in range(34)]  # the gateway-wide limit is 32
    holder = subprocess.Popen(
        [*setpriv(alice.name), "/usr/bin/python3", "-c", _HOLD,
         str(setup.run_dir / "agent.sock"), "40"],
        cwd="/", env=alice.env, text=True, stdout=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        seen = [len(_cards(alice))]
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and seen[-1] < 12:
            time.sleep(0.3)
            seen.append(len(_cards(alice)))
        assert 0 < max(seen) <= 16, seen  # at most alice's share of the 32: half, with two humans
        mine = propose(setup, bob)
        try:
            card = _wait_card(bob)
            assert card["user"] == {"uid": bob.uid, "name": bob.name}
            denied = bob.sp("approvals", "deny", card["id"],
                            "--passphrase-file", str(bob.passphrase_file))  # fmt: skip
            assert denied.returncode == 0, denied.stdout + denied.stderr
        finally:
            mine.kill()
            mine.wait()
        # A connection of alice's past her share is told which limit it met.
        over = alice.python(
            "import json,socket,struct,sys\n"
            "s=socket.socket(socket.AF_UNIX);s.settimeout(10);s.connect(sys.argv[1])\n"
            "n=struct.unpack('>I',s.recv(4))[0];print(s.recv(n).decode())\n",
            str(setup.run_dir / "agent.sock"),
        )
        reply = json.loads(over.stdout)
        assert reply["ok"] is False and "the most one user may have" in reply["error"]["reason"]
        assert bob.sp("gateway", "status").returncode == 0
    finally:
        for process in [*flood, holder]:
            process.kill()
            process.wait()
