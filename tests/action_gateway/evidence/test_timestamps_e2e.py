"""A real gateway whose [audit.timestamp] names failing authorities (a real TSA's paths that
hang 10 s, answer garbage, stamp another digest, or sign under another CA, and a port nothing
listens on): actions go on at their own pace, and `sp doctor` names each fault."""

from __future__ import annotations

import time
from pathlib import Path

from harness.gateway import POLICY, Gateway, clean_env, decide, ssh, wait_card, wait_until
from harness.real_tsa import TsaServer
from safeport.action_gateway.evidence import stamper
from safeport.vault.timestamp_check import STAMPS_FILE
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
