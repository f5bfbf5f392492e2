"""What a requester can make the gateway write, on the real gateway: refusals past the uid's
budget are counted into a few records (the journal stays small and still verifies), and a disk
that fills refuses proposals with a reason while the human's commands keep working, until space
comes back (no restart)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.gateway import REPO, Gateway, clean_env, decide, ssh, wait_card, wait_until
from tests.conftest import need

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.evidence"

pytestmark = pytest.mark.integration

RESERVE = 1024 * 1024


def _verify(home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "safeport", "audit", "verify"],
        cwd=REPO, env=clean_env(home), capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_thousands_of_refusals_make_a_bounded_number_of_records_with_the_right_counts(
    gateway: Gateway,
) -> None:
    before = len(gateway.journal("actions"))
    conn = gateway.agent()
    flood = 3000
    for n in range(flood):
        reply = conn.call(ssh(f"r{n}", command="no_such_command"))
        assert reply["ok"] is False and reply["error"]["code"] == "denied", reply
    conn.close()
    assert gateway.stop() == 0  # the counts still held are journaled at stop
    records = gateway.journal("actions")[before:]
    whole = [r for r in records if r["kind"] == "action.denied"]
    many = [r["body"] for r in records if r["kind"] == "action.denied_many"]
    # The uid's first refusals are journaled whole, the rest counted (one record per category
    # and window), so the journal grew by a few dozen records, not by thousands.
    assert len(whole) == 20
    assert len(records) < 40, [r["kind"] for r in records]
    assert sum(int(body["count"]) for body in many) == flood - len(whole)
    assert {body["uid"] for body in many} == {os.getuid()}
    assert all(body["first_at"] <= body["last_at"] for body in many)
    verified = _verify(gateway.home)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    gateway.start()  # the fixture stops it again


def test_a_few_refusals_are_each_journaled_whole(gateway: Gateway) -> None:
    """The legitimate case: an agent that is refused now and then leaves a full record each."""
    conn = gateway.agent()
    for n in range(5):
        assert conn.call(ssh(f"r{n}", command="no_such_command"))["ok"] is False
    conn.close()
    wait_until(lambda: len([k for k in gateway.kinds("actions") if k == "action.denied"]) == 5)
    assert "action.denied_many" not in gateway.kinds("actions")


@pytest.fixture
def small_disk(gateway_home: Path) -> Iterator[Path]:
    """The journals' folder on a 4 MiB tmpfs of its own."""
    need(os.geteuid() == 0 and shutil.which("mount") is not None, "root, to mount a tmpfs")
    audit = gateway_home / "audit"
    audit.mkdir(mode=0o700)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", str(audit)],
                   check=True, capture_output=True)  # fmt: skip
    try:
        yield audit
    finally:
        subprocess.run(["umount", "-l", str(audit)], check=False, capture_output=True)


def _fill(folder: Path, leave: int) -> Path:
    st = os.statvfs(folder)
    free = st.f_bavail * st.f_frsize
    filler = folder / "filler"
    with filler.open("wb") as out:
        out.write(b"\0" * max(0, free - leave))
    return filler


def test_a_full_disk_refuses_proposals_with_a_reason_and_they_work_again_once_space_returns(
    gateway_home: Path, small_disk: Path
) -> None:
    gw = Gateway(gateway_home)
    gw.write_policy()
    gw.start("--journal-reserve-bytes", str(RESERVE))
    try:
        gw.unlock()
        gw.accept_policy()
        agent = gw.spawn_agent()
        agent.send(ssh("s1", command="uptime"))
        assert decide(gw, wait_card(gw)["id"])["ok"]
        assert agent.next()["ok"]

        filler = _fill(small_disk, RESERVE // 4)
        time.sleep(0.3)  # the free-space reading is at most a quarter second old
        refused = agent.call(ssh("s2", command="uptime"))
        assert refused["ok"] is False and refused["error"]["code"] == "unavailable", refused
        assert "almost full" in refused["error"]["reason"]
        # The human's side still answers, and says why.
        status = gw.control("status")
        assert status["ok"] and status["result"]["journal_space"]["low"] is True
        assert gw.control("approvals.list")["ok"]

        filler.unlink()
        time.sleep(0.3)
        assert agent.call(ssh("s3", command="uptime"))["ok"]  # no restart needed
        assert gw.control("status")["result"]["journal_space"]["low"] is False
        agent.exit()
    finally:
        assert gw.stop() == 0, gw.stderr_path.read_text()
    counted = [r["body"] for r in gw.journal("actions") if r["kind"] == "action.denied_many"]
    assert [(b["category"], b["count"]) for b in counted] == [("disk_space", 1)]
    verified = _verify(gateway_home)
    assert verified.returncode == 0, verified.stdout + verified.stderr
