"""Approvals a security key signs, over the real gateway's control socket: python-fido2's
client stack (``Fido2Client``, its client data, CTAP2) drives a software authenticator with
real P-256 keys and a touch the test gives. Each attack sits beside the legitimate use."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fido2.utils import websafe_decode, websafe_encode

from harness.gateway import PASSPHRASE, POLICY, Gateway, ssh, wait_until
from harness.soft_authenticator import SoftAuthenticator
from safeport.gateway_client.security_key import KeySigner
from safeport.shared.schemas.key_wire import KeyAssertion, KeyChallengeResult, KeyRequest

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.approvals"

KEYED = POLICY.replace(
    'kind = "ssh-key"\napproval = "per-call"\n',
    'kind = "ssh-key"\napproval = "per-call"\napproval_factor = "key"\n',
    1,
)
assert KEYED != POLICY


@pytest.fixture
def keyed(gateway_home: Path) -> Iterator[tuple[Gateway, SoftAuthenticator]]:
    """A gateway whose build-key needs a key, with one soft key enrolled (the passphrase
    enrols the first)."""
    gw = Gateway(gateway_home)
    gw.write_policy(KEYED)
    gw.start()
    gw.unlock()
    gw.accept_policy()
    key = SoftAuthenticator()
    try:
        reply = enroll(gw, key, "blue", passphrase=PASSPHRASE)
        assert reply["ok"], reply
        yield gw, key
    finally:
        assert gw.stop() == 0, gw.stderr_path.read_text()


def enroll(
    gw: Gateway,
    key: SoftAuthenticator,
    name: str,
    *,
    passphrase: str | None = None,
    signer: SoftAuthenticator | None = None,
) -> dict[str, Any]:
    issued = challenge(gw, "enroll", name)
    key.touch.set()
    registration = KeySigner(key).register(issued, name)
    proof: dict[str, Any] = {"passphrase": passphrase} if passphrase else {}
    if signer is not None:
        proof["assertion"] = sign(signer, issued.request).model_dump()
    return gw.control("approver.enroll", name=name, registration=registration.model_dump(), **proof)


def challenge(gw: Gateway, purpose: str, subject: str) -> KeyChallengeResult:
    reply = gw.control("approver.key_challenge", purpose=purpose, subject=subject)
    assert reply["ok"], reply
    return KeyChallengeResult.model_validate(reply["result"])


def sign(key: SoftAuthenticator, request: KeyRequest) -> KeyAssertion:
    key.touch.set()  # the human touches
    return KeySigner(key).sign(request)


def card_of(gw: Gateway, *, not_id: str | None = None) -> dict[str, Any]:
    deadline = time.monotonic() + 30  # returns as soon as it appears; a loaded machine is slow
    while time.monotonic() < deadline:
        cards = [c for c in gw.control("approvals.list")["result"]["cards"] if c["id"] != not_id]
        if cards:
            return dict(cards[0])
        time.sleep(0.02)
    raise AssertionError("no card appeared")


def answer(gw: Gateway, card: dict[str, Any], assertion: KeyAssertion | None) -> dict[str, Any]:
    extra = {"assertion": assertion.model_dump()} if assertion else {}
    return gw.control(
        "approvals.decide", id=card["id"], approve=True, passphrase=PASSPHRASE, **extra
    )


def runs(gw: Gateway) -> int:
    return sum(1 for event in gw.touched() if event["event"] == "executor.ssh")


def request_of(card: dict[str, Any]) -> KeyRequest:
    return KeyRequest.model_validate(card["key"])


def test_a_touch_over_the_card_approves_it_and_the_action_runs(keyed: Any) -> None:
    gw, key = keyed
    agent = gw.spawn_agent()
    agent.send(ssh("k1", service="web"))
    card = card_of(gw)
    # The card names the key that will sign, and the relying party it signs for.
    assert [k["name"] for k in card["key"]["keys"]] == ["blue"]
    reply = answer(gw, card, sign(key, request_of(card)))
    assert reply["ok"], reply
    assert agent.next()["ok"]
    assert runs(gw) == 1
    used = [r["body"] for r in gw.journal("sessions") if r["kind"] == "approver.key_used"]
    assert used and used[-1]["counter"] >= 1
    agent.exit()


def test_the_correct_passphrase_without_a_key_is_refused(keyed: Any) -> None:
    gw, key = keyed
    agent = gw.spawn_agent()
    agent.send(ssh("k2", service="web"))
    card = card_of(gw)
    refused = answer(gw, card, None)
    assert not refused["ok"]
    assert "security key" in refused["error"]["reason"]
    assert "passphrase alone" in refused["error"]["reason"]
    assert runs(gw) == 0
    journaled = [r["body"] for r in gw.journal("sessions") if r["kind"] == "approval.key_refused"]
    assert [entry["card"] for entry in journaled] == [card["id"]]
    # The human's touch still answers the same card.
    assert answer(gw, card, sign(key, request_of(card)))["ok"]
    assert agent.next()["ok"] and runs(gw) == 1
    agent.exit()


def test_hostile_client_data_and_cbor_in_an_answer_are_refused_and_the_card_still_answered(
    keyed: Any,
) -> None:
    """What the approver's client sends over control.sock is parsed before any signature is
    checked: nested JSON, a repeated key, nested CBOR are each a refusal, not a crash."""
    gw, key = keyed
    agent = gw.spawn_agent()
    agent.send(ssh("h1", service="web"))
    card = card_of(gw)
    honest = sign(key, request_of(card))
    client_data = websafe_decode(honest.client_data)
    hostile = {
        "client_data": websafe_encode(b"[" * 3000),
        "client_data ": websafe_encode(client_data[:-1] + b',"crossOrigin":false}'),
        "authenticator_data": websafe_encode(
            websafe_decode(honest.authenticator_data)[:32]
            + b"\x81\0\0\0\x09"
            + b"\xa1\x00" * 1500
            + b"\x00"
        ),
    }
    for field, value in hostile.items():
        forged = honest.model_copy(update={field.strip(): value})
        refused = answer(gw, card, forged)
        assert not refused["ok"], field
        assert refused["error"]["code"] != "internal", refused
        assert "malformed" in refused["error"]["reason"], refused
    assert gw.healthy() and runs(gw) == 0
    assert "Traceback" not in gw.stderr_path.read_text()
    assert answer(gw, card, sign(key, request_of(card)))["ok"]
    assert agent.next()["ok"] and runs(gw) == 1
    agent.exit()


def test_an_assertion_for_card_a_does_not_answer_card_b(keyed: Any) -> None:
    gw, key = keyed
    first, second = gw.spawn_agent(), gw.spawn_agent()
    first.send(ssh("a", service="web"))
    card_a = card_of(gw)
    second.send(ssh("b", service="web"))
    card_b = card_of(gw, not_id=card_a["id"])
    for_a = sign(key, request_of(card_a))
    refused = answer(gw, card_b, for_a)
    assert not refused["ok"] and "challenge" in refused["error"]["reason"].lower()
    assert runs(gw) == 0
    assert answer(gw, card_a, for_a)["ok"]
    assert answer(gw, card_b, sign(key, request_of(card_b)))["ok"]
    assert first.next()["ok"] and second.next()["ok"] and runs(gw) == 2
    first.exit()
    second.exit()


def test_an_assertion_replayed_for_a_second_card_is_refused(keyed: Any) -> None:
    gw, key = keyed
    agent = gw.spawn_agent()
    agent.send(ssh("r1", service="web"))
    card = card_of(gw)
    touch = sign(key, request_of(card))
    assert answer(gw, card, touch)["ok"] and agent.next()["ok"]
    # The same call asked again is a new card; the old touch does not answer it, nor the old
    # card once more.
    agent.send(ssh("r2", service="web"))
    again = card_of(gw, not_id=card["id"])
    assert not answer(gw, again, touch)["ok"]
    assert not answer(gw, card, touch)["ok"]
    assert runs(gw) == 1
    assert answer(gw, again, sign(key, request_of(again)))["ok"] and agent.next()["ok"]
    agent.exit()


def test_a_valid_assertion_after_the_card_expired_is_refused(keyed: Any) -> None:
    gw, key = keyed
    agent = gw.spawn_agent()
    agent.send(ssh("e1", service="web"))
    card = card_of(gw)
    touch = sign(key, request_of(card))
    assert agent.next(timeout=10)["error"]["code"] == "timeout"  # approval_timeout_s = 3
    late = answer(gw, card, touch)
    assert not late["ok"] and runs(gw) == 0
    agent.exit()


@pytest.mark.parametrize(
    ("knob", "value", "reason"),
    [
        ("clear_up", True, "user present"),
        ("rp_id", "evil.example", "rp id"),
    ],
)
def test_a_key_that_signs_without_presence_or_for_another_party_is_refused(
    keyed: Any, knob: str, value: object, reason: str
) -> None:
    gw, key = keyed
    agent = gw.spawn_agent()
    agent.send(ssh("u1", service="web"))
    card = card_of(gw)
    setattr(key.knobs, knob, value)
    refused = answer(gw, card, sign(key, request_of(card)))
    assert not refused["ok"] and reason in refused["error"]["reason"].lower()
    setattr(key.knobs, knob, type(value)() if isinstance(value, bool) else None)
    assert answer(gw, card, sign(key, request_of(card)))["ok"] and agent.next()["ok"]
    agent.exit()


def test_a_counter_that_goes_backwards_is_refused(keyed: Any) -> None:
    gw, key = keyed
    agent = gw.spawn_agent()
    agent.send(ssh("c1", service="web"))
    card = card_of(gw)
    assert answer(gw, card, sign(key, request_of(card)))["ok"] and agent.next()["ok"]
    agent.send(ssh("c2", service="web"))
    card = card_of(gw, not_id=card["id"])
    key.knobs.counter_fixed = 1  # a clone that has signed less than the original
    refused = answer(gw, card, sign(key, request_of(card)))
    assert not refused["ok"] and "cloned" in refused["error"]["reason"]
    key.knobs.counter_fixed = None
    assert answer(gw, card, sign(key, request_of(card)))["ok"] and agent.next()["ok"]
    agent.exit()


def test_a_key_that_is_not_enrolled_is_refused(keyed: Any) -> None:
    gw, key = keyed
    stranger = SoftAuthenticator()
    # It made a credential for this gateway's relying party, but it was never enrolled.
    issued = challenge(gw, "enroll", "stranger")
    stranger.touch.set()
    KeySigner(stranger).register(issued, "stranger")
    stranger.knobs.ignore_allow_list = True
    agent = gw.spawn_agent()
    agent.send(ssh("n1", service="web"))
    card = card_of(gw)
    refused = answer(gw, card, sign(stranger, request_of(card)))
    assert not refused["ok"] and "not enrolled" in refused["error"]["reason"]
    assert answer(gw, card, sign(key, request_of(card)))["ok"] and agent.next()["ok"]
    agent.exit()


def test_enrolment_and_removal_by_a_passphrase_holder_are_refused(keyed: Any) -> None:
    gw, key = keyed
    rogue = SoftAuthenticator()
    refused = enroll(gw, rogue, "rogue", passphrase=PASSPHRASE)
    assert not refused["ok"] and "passphrase alone" in refused["error"]["reason"]
    blue = gw.control("approver.keys")["result"]["keys"][0]["id"]
    challenge(gw, "remove", blue)
    gone = gw.control("approver.remove", id=blue, passphrase=PASSPHRASE)
    assert not gone["ok"] and "passphrase alone" in gone["error"]["reason"]
    # The human, touching the enrolled key, enrols a second one and removes the first.
    spare = SoftAuthenticator()
    assert enroll(gw, spare, "spare", signer=key)["ok"]
    issued = challenge(gw, "remove", blue)
    touch = sign(spare, issued.request).model_dump()
    removed = gw.control("approver.remove", id=blue, assertion=touch)
    assert removed["ok"], removed
    names = [k["name"] for k in gw.control("approver.keys")["result"]["keys"]]
    assert names == ["spare"]


def test_turning_the_factor_off_needs_a_key(keyed: Any) -> None:
    gw, key = keyed
    gw.write_policy(POLICY)
    digest = gw.control("policy.status")["result"]["file"]
    refused = gw.control("policy.accept", passphrase=PASSPHRASE, digest=digest)
    assert not refused["ok"] and "security key" in refused["error"]["reason"]
    issued = challenge(gw, "policy", digest)
    accepted = gw.control(
        "policy.accept",
        passphrase=PASSPHRASE,
        digest=digest,
        assertion=sign(key, issued.request).model_dump(),
    )
    assert accepted["ok"], accepted
    wait_until(lambda: gw.control("approver.keys")["result"]["factor_in_use"] is False)


def test_user_verification_the_policy_asks_for_is_required(keyed: Any) -> None:
    gw, key = keyed
    gw.write_policy(KEYED + "\n[approvals]\nuser_verification = true\n")
    gw.accept_policy()  # tightening: the passphrase is enough
    agent = gw.spawn_agent()
    agent.send(ssh("v1", service="web"))
    card = card_of(gw)
    assert card["key"]["user_verification"] is True
    # A client that asks the key for presence only: the gateway wants the verified flag.
    presence_only = request_of(card).model_copy(update={"user_verification": False})
    refused = answer(gw, card, sign(key, presence_only))
    assert not refused["ok"] and "verif" in refused["error"]["reason"].lower()
    key.knobs.built_in_uv = True  # a fingerprint reader verifies its user with the touch
    assert answer(gw, card, sign(key, request_of(card)))["ok"] and agent.next()["ok"]
    agent.exit()


def test_the_first_enrolment_from_inside_an_agent_is_refused(gateway: Gateway) -> None:
    # No key is enrolled yet, so the passphrase enrols: but never from an agent's process tree.
    agent = gateway.spawn_agent()
    agent.call({"v": 1, "id": "h", "type": "hello"})  # connected: its tree is an agent's
    registration = {"client_data": "eyJ9", "attestation_object": "oA"}
    params = json.dumps({"name": "rogue", "registration": registration, "passphrase": PASSPHRASE})
    argv = [sys.executable, "-m", "tests.action_gateway.control_client", "approver.enroll", params]
    reply = json.loads(agent.spawn(argv)["out"])
    assert reply["ok"] is False and "inside the requesting process" in reply["error"]["reason"]
    agent.exit()
    # From outside every agent's tree, the human enrols with the passphrase.
    assert enroll(gateway, SoftAuthenticator(), "blue", passphrase=PASSPHRASE)["ok"]
    assert [k["name"] for k in gateway.control("approver.keys")["result"]["keys"]] == ["blue"]


def test_an_enrolment_touch_proves_one_enrolment_even_from_a_key_without_a_counter(
    keyed: Any,
) -> None:
    gw, key = keyed
    key.knobs.counter_step = 0
    key.knobs.counter_fixed = 0  # a key without a counter: its touches carry no sequence
    issued = challenge(gw, "enroll", "spare")
    touch = sign(key, issued.request).model_dump()
    # The human's new key failed to register: the proof went through, the enrolment did not,
    # and the challenge is spent with it.
    broken = {"client_data": "e30", "attestation_object": "oA"}
    failed = gw.control("approver.enroll", name="spare", registration=broken, assertion=touch)
    assert not failed["ok"]
    # An agent that read the touch off the wire replays it with a key of its own.
    rogue = SoftAuthenticator()
    rogue.touch.set()
    own = KeySigner(rogue).register(issued, "spare").model_dump()
    replayed = gw.control("approver.enroll", name="spare", registration=own, assertion=touch)
    assert not replayed["ok"] and "no challenge" in replayed["error"]["reason"], replayed
    # The human retries with a fresh challenge and a fresh touch.
    spare = SoftAuthenticator()
    assert enroll(gw, spare, "spare", signer=key)["ok"]
    assert [k["name"] for k in gw.control("approver.keys")["result"]["keys"]] == ["blue", "spare"]


_SWAP = """
import os, sys, time
home, end = sys.argv[1], time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    for name in ("keyed.toml", "loose.toml"):
        os.link(os.path.join(home, name), os.path.join(home, "swap.toml"))
        os.replace(os.path.join(home, "swap.toml"), os.path.join(home, "gateway.toml"))
"""


def test_a_policy_swapped_in_after_the_key_check_read_the_file_is_not_accepted(
    keyed: Any,
) -> None:
    """An agent with the passphrase asks to accept the digest of a policy that turns the key
    off while it swaps gateway.toml between that policy and the served one: the key check and
    the acceptance must judge the same text."""
    gw, key = keyed
    loose = POLICY + "\n# the key is off\n"
    (gw.home / "keyed.toml").write_text(KEYED)
    (gw.home / "loose.toml").write_text(loose)
    digest = hashlib.sha256(loose.encode("utf-8")).hexdigest()
    swapper = subprocess.Popen([sys.executable, "-c", _SWAP, str(gw.home), "20"])
    try:
        for _ in range(120):
            reply = gw.control("policy.accept", passphrase=PASSPHRASE, digest=digest)
            assert not reply["ok"], "a policy turning the key off was accepted without a touch"
    finally:
        swapper.kill()
        swapper.wait()
    assert gw.control("approver.keys")["result"]["factor_in_use"] is True
    # The legitimate use: the human accepts it with a touch of the enrolled key.
    gw.write_policy(loose)
    issued = challenge(gw, "policy", digest)
    touch = sign(key, issued.request).model_dump()
    accepted = gw.control("policy.accept", passphrase=PASSPHRASE, digest=digest, assertion=touch)
    assert accepted["ok"], accepted


def test_a_policy_turning_the_key_off_cannot_land_after_the_human_turned_it_on(
    keyed: Any,
) -> None:
    """The key is off (the human turned it off with a touch) and an agent with the passphrase
    keeps accepting a policy that leaves it off; when the human turns it back on, none of the
    agent's acceptances checked against the old policy may be served after the human's."""
    gw, key = keyed
    off = POLICY + "\n# off\n"
    digest = hashlib.sha256(off.encode("utf-8")).hexdigest()
    issued = challenge(gw, "policy", digest)
    touch = sign(key, issued.request).model_dump()
    turned = gw.control(
        "policy.accept", passphrase=PASSPHRASE, digest=digest, text=off, assertion=touch
    )
    assert turned["ok"], turned
    loose = POLICY + "\n# the agent's\n"
    loose_digest = hashlib.sha256(loose.encode("utf-8")).hexdigest()
    keyed_digest = hashlib.sha256(KEYED.encode("utf-8")).hexdigest()
    stop = threading.Event()

    def agent() -> None:
        while not stop.is_set():
            gw.control("policy.accept", passphrase=PASSPHRASE, digest=loose_digest, text=loose)

    agents = [threading.Thread(target=agent) for _ in range(3)]
    for thread in agents:
        thread.start()
    try:
        for _ in range(5):
            on = gw.control("policy.accept", passphrase=PASSPHRASE, digest=keyed_digest, text=KEYED)
            assert on["ok"], on
            served = gw.control("policy.status")["result"]["served"]
            assert served == keyed_digest, (
                "an acceptance checked before the key was on landed after"
            )
            # The human turns it off again, with a touch, for the next round.
            issued = challenge(gw, "policy", digest)
            touch = sign(key, issued.request).model_dump()
            gw.control(
                "policy.accept", passphrase=PASSPHRASE, digest=digest, text=off, assertion=touch
            )
    finally:
        stop.set()
        for thread in agents:
            thread.join()


def test_one_enrolment_touch_enrols_one_key_even_when_replayed_at_once(keyed: Any) -> None:
    """A key without a counter: an agent that reads the human's enrolment touch off the wire
    sends it at the same moment with a key of its own; one touch still enrols one key (which
    one is whoever's arrives first: the touch binds the name, not the new key)."""
    gw, key = keyed
    key.knobs.counter_step = 0
    key.knobs.counter_fixed = 0
    for round_ in range(4):
        name = f"spare{round_}"
        issued = challenge(gw, "enroll", name)
        touch = sign(key, issued.request).model_dump()
        regs = []
        for device in (SoftAuthenticator(), SoftAuthenticator()):
            device.touch.set()
            regs.append(KeySigner(device).register(issued, name).model_dump())
        replies: list[dict[str, Any]] = []
        threads = [
            threading.Thread(target=_enrol_into, args=(gw, replies, name, reg, touch))
            for reg in regs
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sum(1 for reply in replies if reply["ok"]) == 1, replies
        refused = next(reply for reply in replies if not reply["ok"])
        assert "no challenge" in refused["error"]["reason"], refused


def _enrol_into(
    gw: Gateway, replies: list[dict[str, Any]], name: str, reg: dict[str, Any], touch: Any
) -> None:
    replies.append(gw.control("approver.enroll", name=name, registration=reg, assertion=touch))
