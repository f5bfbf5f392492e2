"""Two humans served by one dedicated gateway: each card says who asks, and one human cannot
see the other's cards, end their work or stop the gateway without the passphrase.

Real accounts (useradd), the real gateway under its own account (setpriv), every human step
through `sp` under the human's uid; a proposal comes from a raw agent.sock client of alice's.
"""

from __future__ import annotations

import json
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
