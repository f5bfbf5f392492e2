"""The crash drill: SIGKILL the real gateway at random points, restart it, and audit what is left.

    python -m tests.drills.crash_drill --kills 1000 [--seed N]   (or SAFEPORT_DRILL_KILLS=1000)

The gateway runs the real vault file (fast KDF), sealed journals rotating every 4 KiB, and an
executor stub that leaves one file per call (:mod:`harness.call_files`). A requester process
proposes HTTP actions on its session grant without pause; each cycle starts the gateway, unlocks,
approves the requester's session card, and kills the gateway after a random delay, in one of
these modes (in turn):

- ``actions``: 0-300 ms into the flow of actions: before, inside or after an intent record,
  during execution, during an outcome record, and (every few records, at 4 KiB) a rotation;
- ``vault-save``: 0-150 ms after a ``vault.rotate`` was sent on control.sock, with the save in
  flight (its reply, if any, says whether it was acknowledged); the first save of a run is killed
  as soon as it is sent and the second only after its reply, so that even a short run has both a
  save cut off and one acknowledged, whatever the machine's speed;
- ``startup``: as soon as the gateway answers, while it closes interrupted intents;
- ``torn-tail``: as ``actions``, and then the bytes of a half-written record are appended to a
  journal, as a power cut mid-write would leave them (SIGKILL never tears a single write()).

After the last cycle the gateway is started once more and stopped cleanly, and :func:`audit`
checks: every journal verifies; each torn tail was trimmed into exactly one ``recovery`` record;
no alarm was raised; every executor call has an intent record with its digest, written before
the call began, and no action ran twice; every intent is closed exactly once (outcome, denied or
``action.interrupted``); every acknowledged action has its ``ok`` outcome; the vault opens and
holds the last acknowledged value (or one whose save was in flight at a kill).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.call_files import read_calls
from harness.gateway import PASSPHRASE, REPO, Gateway, clean_env
from safeport.action_gateway.evidence.restart_scan import scan_refs
from safeport.shared.audit import journal_segments, verify_journal
from safeport.shared.paths import locate
from safeport.shared.wire import recv_message, send_message
from safeport.vault.backend import Authority, FileVaultBackend
from safeport.vault.kdf import KdfParams
from safeport.vault.secrets import SecretBytes, TokenSecret
from safeport.vault.store import VaultFile

FAST_KDF = KdfParams(memory_kib=8, iterations=1, lanes=1)
SEGMENT_BYTES = 4096
MODES = ("actions", "vault-save", "actions", "startup", "torn-tail")
ALARMS = {
    "vault.rollback",
    "journal.truncated",
    "journal.rewritten",
    "checkpoint.invalid",
    "vault.public_keys_mismatch",
}
CLOSERS = {"action.outcome", "action.denied", "action.interrupted"}

POLICY = """
[gateway]
approval_timeout_s = 10
auto_lock_minutes = 0
session_max_minutes = 60

[credentials.deploy-token]
kind = "token"
approval = "session"

[http.services.deploy-api]
base_url = "https://api.example.com"
credential = "deploy-token"

[http.services.deploy-api.operations.deployment_status]
method = "GET"
path = "/v1/{environment}/services/{service}/status"
response_fields = ["state"]
params.environment = { enum = ["staging", "production"] }
params.service = { pattern = "^[a-z0-9-]{1,48}$" }
"""


@dataclass
class DrillReport:
    kills: int = 0
    modes: Counter[str] = field(default_factory=Counter)
    torn_tails: int = 0
    recoveries: int = 0
    calls: int = 0
    intents: int = 0
    interrupted: int = 0
    acknowledged: int = 0
    saves_acknowledged: int = 0
    saves_in_flight: int = 0
    rotations: int = 0
    calls_without_intent: int = 0
    seconds: float = 0.0

    def as_json(self) -> dict[str, object]:
        return {**self.__dict__, "modes": dict(self.modes)}


def _token(text: str) -> dict[str, Any]:
    import base64

    return {"token": {"secret_b64": base64.b64encode(text.encode()).decode()}}


class Drill:
    def __init__(self, home: Path, seed: int) -> None:
        self.home = home
        self.rng = random.Random(seed)
        self.gw = Gateway(home)
        self.calls_dir = home / "calls"
        self.replies: queue.Queue[dict[str, Any]] = queue.Queue()
        self.report = DrillReport()
        # Values of deploy-token: the last acknowledged, and those sent after it whose reply
        # never came (a kill took the gateway while the save was in flight).
        self.acked_value = "v0"
        self.unacked: list[str] = []
        self._value_numbers = 0
        self._agent: subprocess.Popen[str] | None = None
        self.save_errors: list[dict[str, Any]] = []

    # -- setup --------------------------------------------------------------------------------

    def prepare(self) -> None:
        vault = VaultFile.at(locate(env=clean_env(self.home))).create(
            SecretBytes(PASSPHRASE.encode()), kdf=FAST_KDF
        )
        vault.add("deploy-token", "token", {"token": SecretBytes(b"v0")})
        vault.lock()
        self.gw.write_policy(POLICY)

    def start_gateway(self) -> None:
        self.gw.start(
            "--real-vault",
            "--calls-dir",
            str(self.calls_dir),
            "--segment-bytes",
            str(SEGMENT_BYTES),
        )

    def start_agent(self) -> None:
        lock = self.home / "client.lock"
        agent = [sys.executable, "-m", "tests.drills.drill_agent", str(self.home), "a"]
        self._agent = subprocess.Popen(
            ["flock", "-s", str(lock), *agent],
            cwd=REPO,
            env=clean_env(self.home),
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,  # flock and the requester under it: one group to kill
        )
        threading.Thread(target=self._read_agent, daemon=True).start()

    def _read_agent(self) -> None:
        assert self._agent is not None and self._agent.stdout is not None
        for line in self._agent.stdout:
            self.replies.put(json.loads(line))

    def stop_agent(self) -> None:
        if self._agent is not None:
            os.killpg(self._agent.pid, signal.SIGKILL)
            self._agent.wait(10)

    # -- one cycle ----------------------------------------------------------------------------

    def approve_session(self, timeout: float = 10) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            cards = self.gw.control("approvals.list")["result"]["cards"]
            if cards:
                reply = self.gw.control(
                    "approvals.decide", id=cards[0]["id"], approve=True, passphrase=PASSPHRASE
                )
                assert reply["ok"], reply
                return
            time.sleep(0.01)
        raise AssertionError("the requester's session card never appeared")

    def wait_for_actions(self, count: int, timeout: float = 10) -> None:
        """Until ``count`` proposals were answered ok in this cycle."""
        seen = 0
        deadline = time.monotonic() + timeout
        while seen < count:
            try:
                line = self.replies.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError("the requester's actions stopped being answered") from None
            self._note(line)
            seen += 1 if line.get("ok") else 0

    def _note(self, line: dict[str, Any]) -> None:
        if line.get("ok"):
            self.acknowledged.add(str(line["id"]))

    acknowledged: set[str]

    def send_save(self) -> tuple[threading.Thread, threading.Event]:
        """vault.rotate on its own connection; the reply (if any) comes on another thread.

        The event is set once the request was written to the socket."""
        sent = threading.Event()
        self._value_numbers += 1
        value = f"v{self._value_numbers}"
        self.unacked.append(value)
        self.report.saves_in_flight += 1

        def run() -> None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(15)
            try:
                sock.connect(str(self.gw.control_path))
                params = {"passphrase": PASSPHRASE, "name": "deploy-token", "value": _token(value)}
                send_message(
                    sock,
                    {"v": 1, "id": "s", "type": "control", "op": "vault.rotate", "params": params},
                )
                sent.set()
                reply = recv_message(sock)
            except Exception:
                return  # killed before it answered: not acknowledged
            finally:
                sock.close()
            if not reply.get("ok"):
                self.save_errors.append(reply)  # a save the drill meant to succeed
                return
            if reply.get("ok"):
                self.report.saves_acknowledged += 1
                self.report.saves_in_flight -= 1
                self.acked_value = value
                # A save acknowledged after others were sent supersedes them.
                self.unacked = self.unacked[self.unacked.index(value) + 1 :]

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        return thread, sent

    def kill(self) -> None:
        assert self.gw.proc is not None
        os.kill(self.gw.proc.pid, signal.SIGKILL)
        self.gw.proc.wait(10)
        self.report.kills += 1

    def tear_a_tail(self) -> None:
        """Half a record at the end of one journal's active file, as a power cut leaves it."""
        name = self.rng.choice(["actions", "sessions"])
        path = self.home / "audit" / f"{name}.jsonl"
        if not path.exists():
            return
        cut = b'{"hash":"' + bytes(self.rng.choice(b"0123456789abcdef") for _ in range(40))
        with path.open("ab") as handle:
            handle.write(cut)
        self.report.torn_tails += 1

    def cycle(self, index: int, *, first: bool) -> None:
        mode = MODES[index % len(MODES)]
        self.report.modes[mode] += 1
        self.start_gateway()
        if mode == "startup":
            self.kill()
            return
        self.gw.unlock()
        if first:
            status = self.gw.control("policy.status")["result"]
            reply = self.gw.control("policy.accept", passphrase=PASSPHRASE, digest=status["file"])
            assert reply["ok"], reply
        self.approve_session()
        self.wait_for_actions(1)
        if mode == "vault-save":
            saves = self.report.modes["vault-save"]
            saver, sent = self.send_save()
            if saves == 1:
                sent.wait(10)  # killed as soon as it is sent: a save cut off
            elif saves == 2:
                saver.join(10)  # killed after its reply: an acknowledged save
            else:
                time.sleep(self.rng.uniform(0.0, 0.15))
            self.kill()
            saver.join(10)
            self.check_vault_opens()
            return
        time.sleep(self.rng.uniform(0.0, 0.3))
        self.kill()
        if mode == "torn-tail":
            self.tear_a_tail()

    def check_vault_opens(self) -> str:
        """The vault file after a kill: it opens, and holds an acceptable deploy-token."""
        vault = VaultFile.at(locate(env=clean_env(self.home))).unlock(
            SecretBytes(PASSPHRASE.encode())
        )
        try:
            secret = vault.secret("deploy-token")
            assert isinstance(secret, TokenSecret)
            value = secret.token.reveal().decode()
        finally:
            vault.lock()
        allowed = [self.acked_value, *self.unacked]
        assert value in allowed, f"the vault holds {value!r}, not one of {allowed}"
        # What the vault holds is now the state to build on.
        if value != self.acked_value:
            self.acked_value = value
            self.unacked = self.unacked[self.unacked.index(value) + 1 :]
        return value

    def run(self, kills: int, *, progress: bool = False) -> DrillReport:
        started = time.monotonic()
        self.acknowledged = set()
        self.prepare()
        self.start_agent()
        try:
            for index in range(kills):
                self.cycle(index, first=index == 0)
                if progress:
                    print(
                        f"kill {index + 1}/{kills} {time.monotonic() - started:.1f}s",
                        file=sys.stderr,
                        flush=True,
                    )
            # A last clean run: interrupted intents are closed at its start.
            self.start_gateway()
            self.gw.unlock()
            self.approve_session()
            self.wait_for_actions(3)
            assert self.gw.stop() == 0, self.gw.stderr_path.read_text()[-2000:]
        finally:
            self.stop_agent()
            if self.gw.proc is not None and self.gw.proc.poll() is None:
                self.gw.proc.kill()
        while not self.replies.empty():
            self._note(self.replies.get())
        audit(self)
        self.report.seconds = round(time.monotonic() - started, 1)
        return self.report


def _lines_with_offsets(journal: Path) -> list[tuple[int, dict[str, Any]]]:
    """(end offset over all segments, record) for every complete line, oldest first."""
    out = []
    offset = 0
    for segment in journal_segments(journal):
        if not segment.exists():
            continue
        data = segment.read_bytes()
        for line in data.splitlines(keepends=True):
            offset += len(line)
            if line.endswith(b"\n"):
                out.append((offset, json.loads(line)))
    return out


def audit(drill: Drill) -> None:
    home, report = drill.home, drill.report
    audit_dir = home / "audit"
    actions_path, sessions_path = audit_dir / "actions.jsonl", audit_dir / "sessions.jsonl"
    for path in (actions_path, sessions_path):
        verified = verify_journal(path)
        assert verified.chain == "valid", (path.name, verified)
    report.rotations = sum(len(journal_segments(p)) - 1 for p in (actions_path, sessions_path))

    actions = _lines_with_offsets(actions_path)
    sessions = [record for _, record in _lines_with_offsets(sessions_path)]
    everything = [record for _, record in actions] + sessions
    report.recoveries = sum(1 for record in everything if record["kind"] == "recovery")
    assert report.recoveries == report.torn_tails, (report.recoveries, report.torn_tails)
    raised = [record["kind"] for record in sessions if record["kind"] in ALARMS]
    assert raised == [], raised

    # Unseal the actions journal with the vault's audit key (one unlock).
    backend = FileVaultBackend(VaultFile.at(locate(env=clean_env(home))), kdf=FAST_KDF)
    authority = Authority(passphrase=lambda: SecretBytes(PASSPHRASE.encode()))
    opened = backend.unseal(authority, [record for _, record in actions])
    intents: dict[str, tuple[int, int]] = {}  # prepared digest -> (seq, end offset)
    closed: Counter[int] = Counter()
    interrupted = 0
    outcomes_ok: set[str] = set()
    for (end, raw), record in zip(actions, opened, strict=True):
        kind = raw["kind"]
        if kind == "action.intent":
            digest = record["body"]["request"]["prepared_sha256"]
            assert digest not in intents, "two intents for one prepared action"
            intents[digest] = (raw["seq"], end)
        if kind == "action.interrupted":
            interrupted += 1
        if kind in CLOSERS and "intent" in raw.get("ref", {}):
            closed[raw["ref"]["intent"]] += 1
            if kind == "action.outcome" and record["body"]["status"] == "ok":
                outcomes_ok.add(record["body"]["request_id"])
    report.intents = len(intents)
    report.interrupted = interrupted

    calls = read_calls(drill.calls_dir)
    report.calls = len(calls)
    digests = Counter(str(call["digest"]) for call in calls)
    twice = [digest for digest, count in digests.items() if count > 1]
    assert twice == [], f"{len(twice)} actions ran more than once"
    without = 0
    for call in calls:
        found = intents.get(str(call["digest"]))
        if found is None or found[1] > int(str(call["actions_bytes"])):
            without += 1  # no intent with its digest, or one written after the call began
    report.calls_without_intent = without
    assert report.calls_without_intent == 0, report.calls_without_intent

    intent_seqs = {seq for seq, _ in intents.values()}
    assert set(closed) == intent_seqs, "an intent without a closing record, or a stray close"
    assert all(count == 1 for count in closed.values()), "an intent closed twice"
    assert scan_refs(actions_path).open_intents == ()

    assert drill.save_errors == [], drill.save_errors[:3]
    report.acknowledged = len(drill.acknowledged)
    missing = drill.acknowledged - outcomes_ok
    assert not missing, f"acknowledged without an ok outcome: {sorted(missing)[:5]}"
    drill.check_vault_opens()


def kills_from_env(default: int) -> int:
    return int(os.environ.get("SAFEPORT_DRILL_KILLS", default))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=kills_from_env(1000))
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--home", type=Path, default=None, help="kept afterwards (default: temp)")
    args = parser.parse_args()
    import faulthandler
    import tempfile

    faulthandler.dump_traceback_later(120, repeat=True)

    with tempfile.TemporaryDirectory(prefix="sp-drill-") as tmp:
        home = args.home or Path(tmp) / "h"
        home.mkdir(mode=0o700, exist_ok=True)
        report = Drill(home, args.seed).run(args.kills, progress=True)
    print(json.dumps({"seed": args.seed, **report.as_json()}, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
