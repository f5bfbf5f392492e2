"""A real gateway whose [audit.timestamp] names failing authorities (a real TSA's paths that
hang 10 s, answer garbage, stamp another digest, or sign under another CA, and a port nothing
listens on): actions go on at their own pace, and `sp doctor` names each fault."""

from __future__ import annotations

import json
import time
from pathlib import Path

from harness.gateway import POLICY, Gateway, clean_env, decide, ssh, wait_card, wait_until
from harness.real_tsa import TsaServer
from safeport.action_gateway.evidence import stamper
from safeport.vault.timestamp_check import STAMPS_FILE, load_stamps
from tests.cli.cli_runner import run_sp


def _policy(tsa: TsaServer, *urls: str) -> str:
    entries = "".join(
        f'\n[[audit.timestamp.tsa]]\nurl = "{url}"\nca_file = "{tsa.honest.ca_file}"\n'
        for url in urls
    )
    return POLICY + "\n[audit.timestamp]\ntimeout_s = 4\nstale_after_minutes = 60\n" + entries


def _doctor(gw: Gateway) -> str:
    env = clean_env(gw.home)
    done = run_sp("doctor", "--offline", home=Path(env["SAFEPORT_HOME"]))
    return done.stdout + done.stderr


def test_failing_authorities_delay_no_action_and_each_shows_in_doctor(
    gateway_home: Path, tsa: TsaServer
) -> None:
    faulty = [tsa.url("/slow"), tsa.url("/garbage"), tsa.url("/other"), tsa.url("/wrong-ca")]
    gw = Gateway(gateway_home)
    gw.write_policy(_policy(tsa, *faulty))
    gw.start("--checkpoint-interval", "0.5")
    try:
        gw.unlock()
        # The slow authority holds each request 10 s; the gateway waits 4 s (timeout_s) for
        # it, four authorities in turn: an accept (a save, signed at once and handed to the
        # stamper), an action, or a checkpoint signed on request, that waited on any of them
        # would take 4 s or more.
        started = time.monotonic()
        gw.accept_policy()
        assert time.monotonic() - started < 3.5
        agent = gw.spawn_agent()
        agent.send(ssh("first", service="web"))
        assert decide(gw, wait_card(gw)["id"])["ok"]
        assert agent.next()["ok"]
        for index in range(3):
            started = time.monotonic()
            agent.send(ssh(f"again-{index}", service="web"))
            assert decide(gw, wait_card(gw)["id"])["ok"]
            assert agent.next()["ok"]
            assert time.monotonic() - started < 3.5
        started = time.monotonic()
        assert gw.control("audit.checkpoint")["ok"]
        assert time.monotonic() - started < 3.5

        def faults() -> list[str]:
            stamps = gw.control("status")["result"].get("timestamps") or {}
            return list(stamps.get("faults", []))

        wait_until(lambda: len(faults()) == 4, timeout=30)
        report = _doctor(gw)
        for url, reason in zip(
            faulty,
            ["no answer within 4 s", "not an RFC 3161", "does not verify", "does not verify"],
            strict=True,
        ):
            assert f"{url}: " in report and reason in report, (url, report)
        assert not (gw.home / "audit" / STAMPS_FILE).exists()
        failed = [r for r in gw.journal("sessions") if r["kind"] == "timestamp.failed"]
        assert {r["body"]["tsa"] for r in failed} == set(faulty)
        assert {r["body"]["retry_s"] for r in failed} >= {stamper.FIRST_RETRY_S}
        assert "action.outcome" in gw.kinds("actions")

        # A down authority beside a working one: the stamps go on; the fault still shows.
        gw.write_policy(_policy(tsa, tsa.down_url, tsa.url()))
        gw.accept_policy()
        wait_until(lambda: (gw.home / "audit" / STAMPS_FILE).exists(), timeout=30)
        wait_until(lambda: any(tsa.down_url in fault for fault in faults()), timeout=30)
        report = _doctor(gw)
        assert f"{tsa.down_url}: unreachable" in report
        assert "PROBLEM" in report or "fail" in report.lower()
    finally:
        assert gw.stop() == 0, gw.stderr_path.read_text()


def _stamped(gw: Gateway) -> list[tuple[str, str, int]]:
    """(authority, journal, size) of each stamp kept, in the order they were kept."""
    path = gw.home / "audit" / STAMPS_FILE
    stamps, _ = load_stamps(path.read_bytes() if path.exists() else b"")
    heads = [s.note.split("\n")[:2] for s in stamps]  # "safeport/<journal>/<key>", "<size>"
    return [(s.tsa, o.split("/")[1], int(n)) for s, (o, n) in zip(stamps, heads, strict=True)]


def _caught_up(gw: Gateway, urls: tuple[str, ...]) -> bool:
    """Each authority has stamped the head of each journal in the last signed checkpoint."""
    signed = json.loads((gw.home / "audit" / "checkpoint.json").read_text())["checkpoints"]
    done = set(_stamped(gw))
    return all((u, cp["journal"], cp["seq"]) in done for u in urls for cp in signed)


def _next_signature(gw: Gateway) -> None:
    """Wait for the next periodic checkpoint (every 0.5 s here; 5 minutes by default)."""
    path = gw.home / "audit" / "checkpoint.json"
    before = path.read_bytes()
    wait_until(lambda: path.read_bytes() != before, timeout=30)


def test_a_quiet_gateway_adds_no_stamps_and_a_restart_stamps_nothing_again(
    gateway_home: Path, tsa: TsaServer
) -> None:
    """Periodic checkpoints re-sign unmoved heads, and the gateway restarts: no head is stamped
    twice by one authority; a record then a checkpoint gets its journal one stamp from each
    authority."""
    urls = (tsa.url(), tsa.url("/tsr?second"))
    gw = Gateway(gateway_home)
    gw.write_policy(_policy(tsa, *urls))
    for run in range(2):
        gw.start("--checkpoint-interval", "0.5")
        try:
            gw.unlock()
            gw.accept_policy()  # a restarted gateway serves the policy once accepted again
            assert gw.control("audit.checkpoint")["ok"]
            wait_until(lambda: _caught_up(gw, urls), timeout=30)
            for _ in range(4):  # quiet: the periodic checkpoints sign the same heads again
                _next_signature(gw)
            agent = gw.spawn_agent()
            agent.send(ssh(f"run-{run}", service="web"))
            assert decide(gw, wait_card(gw)["id"])["ok"]
            assert agent.next()["ok"]
            assert gw.control("audit.checkpoint")["ok"]
            wait_until(lambda: _caught_up(gw, urls), timeout=30)
        finally:
            assert gw.stop() == 0, gw.stderr_path.read_text()
    stamped = _stamped(gw)
    assert len(stamped) == len(set(stamped)), "a head was stamped twice by one authority"
    for url in urls:  # the action's journal moved twice after the first stamps: two more
        assert len({seq for u, j, seq in stamped if (u, j) == (url, "actions")}) >= 3
