"""A client that writes its own JSON-RPC lines: what the SDK's parser refuses is not answered
by the transport either, and no argument a client can send costs the reads journal a record or
closes it (every call after it is still served and recorded)."""

from __future__ import annotations

import fcntl
import json
import os
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from safeport.context_server.operations.reads_journal import DURABILITY_WINDOW_S, ReadsJournal
from safeport.context_server.transport.stdio import BUSY, CLOSE_WAIT_S, MAX_IN_FLIGHT, InFlight
from safeport.errors import JournalUnavailable
from safeport.shared.audit import verify_journal
from tests.context_server.test_server import small_workspace

HELLO = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}


def call_line(request_id: int, name: str, arguments: str) -> str:
    """A tools/call line with its arguments as raw JSON text (which may be what json.dumps
    would never write: NaN, lone surrogates)."""
    return (
        f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call",'
        f'"params":{{"name":"{name}","arguments":{arguments}}}}}'
    )


def converse(
    tmp_path: Path, lines: list[str], answered: set[int], *, read_after_writing: bool = False
) -> tuple[dict[object, dict[str, Any]], Path]:
    """Start a server, send the handshake, a first call (it applies the roots, so the rest can
    be answered by the transport itself), ``lines`` and a ping; once the ``answered`` ids and
    the ping have their answers, end input. Every answer by id. ``read_after_writing``: read
    nothing until every line is in the pipe (or the pipe is full and has stayed full)."""
    root, home = small_workspace(tmp_path)
    env = {"SAFEPORT_HOME": str(home), "PATH": os.environ["PATH"]}
    head = [
        json.dumps(HELLO),
        '{"jsonrpc":"2.0","method":"notifications/initialized"}',
        call_line(1, "read_file", '{"path":"notes.md"}'),
    ]
    tail = ['{"jsonrpc":"2.0","id":1000,"method":"ping"}']
    payload = ("\n".join(head + lines + tail) + "\n").encode()
    waiting = {0, 1, 1000} | answered
    answers: dict[object, dict[str, Any]] = {}
    with (tmp_path / "stderr").open("w") as errlog:
        proc = subprocess.Popen(
            [sys.executable, "-m", "safeport.context_server", "--root", str(root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errlog,
            env=env,
        )
        assert proc.stdin is not None and proc.stdout is not None
        killer = threading.Timer(120, proc.kill)  # bounds every read below
        killer.start()
        stdin = proc.stdin

        def send() -> None:
            stdin.write(payload)
            stdin.flush()

        writer = threading.Thread(target=send)
        writer.start()  # megabytes of requests: written while the answers are read
        if read_after_writing:
            writer.join(timeout=15)
            wait_until_output_stalls(proc.stdout.fileno(), lambda: not writer.is_alive())
        try:
            while not waiting <= answers.keys():
                line = proc.stdout.readline()
                assert line, f"the server closed its output; unanswered: {waiting - answers.keys()}"
                frame = json.loads(line)
                assert frame["jsonrpc"] == "2.0"
                answers[frame.get("id")] = frame
            writer.join()
            proc.stdin.close()
            for line in proc.stdout.read().splitlines():
                frame = json.loads(line)
                answers[frame.get("id")] = frame
            assert proc.wait(30) == 0
        finally:
            killer.cancel()
    return answers, home / "audit" / "reads.jsonl"


F_GETPIPE_SZ = 1032  # Linux: a pipe's capacity in bytes


def wait_until_output_stalls(fd: int, written: Callable[[], bool]) -> None:
    """Until the server's unread answers stop growing (three looks, a second apart) with the
    pipe full (the server's next answer waits for the client) or every line written (all is
    answered). A pause of a busy server alone is not a stall: on loaded cores it can last a
    second with the pipe half empty, and reading then would never let the pipe fill."""
    capacity = fcntl.fcntl(fd, F_GETPIPE_SZ)
    deadline = time.monotonic() + 60
    seen: list[int] = []
    while time.monotonic() < deadline:
        seen.append(struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0" * 4))[0])
        stable = len(seen) >= 3 and seen[-1] > 0 and seen[-1] == seen[-2] == seen[-3]
        # A write of up to 8 KiB blocks whole while the pipe has less room than it needs.
        if stable and (seen[-1] >= capacity - 8192 or written()):
            return
        time.sleep(0.5)


def records(journal: Path) -> list[dict[str, Any]]:
    return [json.loads(line)["body"] for line in journal.read_text().splitlines()]


def served_text(answer: dict[str, Any]) -> str:
    result = answer["result"]
    assert result["isError"] is False, result
    return str(result["structuredContent"]["text"])


# Invalid arguments, recorded as the client sent them (bounded): each of these once made a
# record the journal could not write, which lost the records queued with it and refused
# every later call.
POISON = {
    "NaN": '{"path":NaN}',
    "infinity": '{"path":-Infinity,"start_line":Infinity}',
    "a megabyte key": '{"path":5,"' + "k" * 1_100_000 + '":1}',
    "escaped lists of lists": '{"path":5,'
    + ",".join(f'"k{n}":' + json.dumps([["\U0001f600" * 200] * 20] * 20) for n in range(3))
    + "}",
    "lists nested deep": '{"path":' + "[" * 150 + "]" * 150 + "}",
    "a 4000-digit number": '{"path":' + "7" * 4000 + "}",
}


def test_no_argument_a_client_sends_costs_a_record_or_closes_the_journal(
    tmp_path: Path,
) -> None:
    lines = []
    for n, arguments in enumerate(POISON.values()):
        lines.append(call_line(10 + 2 * n, "read_file", arguments))
        lines.append(call_line(11 + 2 * n, "read_file", '{"path":"notes.md"}'))
    lines.append(call_line(99, "read_file", '{"path":".env"}'))
    answers, journal = converse(tmp_path, lines, {*range(10, 10 + 2 * len(POISON)), 99})
    for n in range(len(POISON)):
        refused = answers[10 + 2 * n]["result"]
        assert refused["isError"] is True
        assert "unavailable" not in refused["content"][0]["text"]
        assert served_text(answers[11 + 2 * n]) == "zebra crossing\n"  # the journal is open
    assert answers[99]["result"]["isError"] is True  # private, refused as ever
    bodies = records(journal)
    assert len(bodies) == 2 + 2 * len(POISON)  # the first call, every pair, the private file
    assert [b["reason"] for b in bodies].count(None) == 1 + len(POISON)
    assert verify_journal(journal).ok
    text = journal.read_text()
    assert "CANARYsmallworkspace" not in text
    assert max(len(line) for line in text.splitlines()) < 256 * 1024
    stderr = (tmp_path / "stderr").read_text()
    assert "journal" not in stderr


def test_arguments_a_journal_can_hold_are_recorded_as_sent(tmp_path: Path) -> None:
    arguments = {"path": 5, "tags": ["a", 2, 2.5, None, True], "label": "héron"}
    lines = [call_line(2, "read_file", json.dumps(arguments))]
    answers, journal = converse(tmp_path, lines, {2})
    assert answers[2]["result"]["isError"] is True
    assert records(journal)[-1]["args"] == arguments


def test_lines_the_sdk_parser_refuses_are_not_answered_by_the_transport(
    tmp_path: Path,
) -> None:
    lines = [
        call_line(2, "read_file", '{"path":"\\ud800"}'),  # a lone surrogate
        call_line(3, "read_file", '{"path":"notes.md","x":' + "[" * 199 + "]" * 199 + "}"),
    ]
    answers, journal = converse(tmp_path, lines, set())
    # As the SDK's own transport does, a line that is not JSON to it gets no answer at all.
    assert 2 not in answers and 3 not in answers
    assert answers[1000]["result"] == {}
    assert [b["args"] for b in records(journal)] == [{"path": "notes.md"}]


def test_the_transport_still_answers_what_the_sdk_parser_accepts(tmp_path: Path) -> None:
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "héron 🐦.md").write_text("wings\n")
    lines = [
        call_line(2, "read_file", '{"path":"h\\u00e9ron \\ud83d\\udc26.md"}'),  # a paired escape
        call_line(3, "read_file", '{"path":"notes.md","x":' + "[" * 150 + "]" * 150 + "}"),
        call_line(4, "read_file", '{"path":"notes.md","x":NaN}'),  # ignored, as by the SDK
    ]
    answers, journal = converse(tmp_path, lines, {2, 3, 4})
    assert served_text(answers[2]) == "wings\n"
    assert served_text(answers[3]) == "zebra crossing\n"
    assert served_text(answers[4]) == "zebra crossing\n"
    assert len(records(journal)) == 4


def test_a_writer_stopped_by_anything_refuses_every_later_call(tmp_path: Path) -> None:
    journal = ReadsJournal(tmp_path / "audit", "tests", ["/srv/app"])

    def broken(_path: str) -> bool:
        raise RuntimeError("a policy bug")

    journal.record("read_file", {"path": "a.py"}, is_private=broken, served_bytes=1, refused=None)
    deadline = time.monotonic() + 300 * DURABILITY_WINDOW_S  # generous on loaded cores
    with pytest.raises(JournalUnavailable):  # not served on with the records never written
        while time.monotonic() < deadline:
            journal.record(
                "read_file",
                {"path": "b.py"},
                is_private=lambda _: False,
                served_bytes=1,
                refused=None,
            )
            time.sleep(0.01)
    journal.close()


def test_a_working_writer_keeps_taking_records(tmp_path: Path) -> None:
    journal = ReadsJournal(tmp_path / "audit", "tests", ["/srv/app"])
    for n in range(30):
        journal.record(
            "read_file",
            {"path": f"f{n}.py"},
            is_private=lambda _: False,
            served_bytes=1,
            refused=None,
        )
        time.sleep(0.01)
    journal.close()
    assert len(records(journal.path)) == 30


def pings(first: int, count: int) -> list[str]:
    return [f'{{"jsonrpc":"2.0","id":{n},"method":"ping"}}' for n in range(first, first + count)]


def test_a_client_that_does_not_read_gets_busy_errors_not_a_growing_server(
    tmp_path: Path,
) -> None:
    # Written all at once and read only afterwards: without a cap, every ping the server reads
    # becomes a task holding its answer until the client reads (memory without bound).
    flood = pings(2000, 30_000)
    answers, _ = converse(tmp_path, flood, set(), read_after_writing=True)
    busy = [n for n in range(2000, 32_000) if "error" in answers[n]]
    assert busy, "every request was held until the client read"
    assert all(answers[n]["error"]["code"] == BUSY for n in busy)
    assert all(answers[n]["result"] == {} for n in range(2000, 32_000) if n not in busy)
    assert answers[1000]["result"] == {}  # the server still answers afterwards


def test_requests_within_the_cap_are_all_answered_without_reading(tmp_path: Path) -> None:
    answers, _ = converse(tmp_path, pings(2000, MAX_IN_FLIGHT - 10), set(), read_after_writing=True)
    assert all(answers[n]["result"] == {} for n in range(2000, 2000 + MAX_IN_FLIGHT - 10))


def test_requests_in_flight_are_released_by_their_answer_or_their_cancellation() -> None:
    held = InFlight()

    def request(request_id: int | str) -> types.JSONRPCRequest:
        return types.JSONRPCRequest(jsonrpc="2.0", id=request_id, method="ping")

    assert all(held.admit(request(n)) for n in range(MAX_IN_FLIGHT - 1))
    assert held.admit(request(7))  # a duplicate id counts twice
    assert not held.admit(request("one too many"))
    # The client's answers and notifications always pass: the SDK may be waiting for them.
    assert held.admit(types.JSONRPCResponse(jsonrpc="2.0", id="roots", result={}))
    assert held.admit(types.JSONRPCNotification(jsonrpc="2.0", method="notifications/x"))
    held.answered(types.JSONRPCResponse(jsonrpc="2.0", id="never asked", result={}))
    assert not held.admit(request("still too many"))
    held.answered(types.JSONRPCResponse(jsonrpc="2.0", id=7, result={}))
    assert held.admit(request("after an answer"))
    cancel = {"requestId": 3, "reason": "user"}
    assert held.admit(
        types.JSONRPCNotification(jsonrpc="2.0", method="notifications/cancelled", params=cancel)
    )
    assert held.admit(request("after a cancellation"))
    assert not held.admit(request("full again"))
    error = types.ErrorData(code=BUSY, message="x")
    held.answered(types.JSONRPCError(jsonrpc="2.0", id=7, error=error))  # its duplicate
    assert held.admit(request("after an error"))


# A library that leaves a thread behind, writing to fd 1 until the process exits.
LINGERING_SERVER = r"""
import os, sys, threading, time
from safeport.context_server.__main__ import main
from safeport.context_server.operations.service import WorkspaceService

read_file = WorkspaceService.read_file

def lingering(self, *args, **kwargs):
    def write():
        while True:
            os.write(1, b"STRAY from a lingering thread\n")
            time.sleep(0.001)
    threading.Thread(target=write, daemon=True).start()
    return read_file(self, *args, **kwargs)

WorkspaceService.read_file = lingering
sys.exit(main(sys.argv[1:]))
"""


def test_output_of_a_lingering_thread_stays_off_the_protocol_stream_at_exit(
    tmp_path: Path,
) -> None:
    root, home = small_workspace(tmp_path)
    lines = [json.dumps(HELLO), call_line(1, "read_file", '{"path":"notes.md"}')]
    errlog = (tmp_path / "stderr").open("w+b")
    proc = subprocess.Popen(
        [sys.executable, "-c", LINGERING_SERVER, "--root", str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=errlog,
        env={"SAFEPORT_HOME": str(home), "PATH": os.environ["PATH"]},
    )
    assert proc.stdin is not None and proc.stdout is not None
    killer = threading.Timer(60, proc.kill)
    killer.start()
    try:
        proc.stdin.write(("\n".join(lines) + "\n").encode())
        proc.stdin.flush()
        frames = [json.loads(proc.stdout.readline()) for _ in range(2)]  # the thread runs
        proc.stdin.close()  # end of input while it writes on
        out = proc.stdout.read()
        proc.wait(30)
    finally:
        killer.cancel()
        errlog.close()
    err = (tmp_path / "stderr").read_bytes()
    assert [f["id"] for f in frames] == [0, 1]
    assert served_text(frames[1]) == "zebra crossing\n"
    assert out == b""  # nothing after the last frame, not even while the process exits
    assert b"STRAY from a lingering thread" in err
    assert proc.returncode == 0


def run_to_end_of_input(tmp_path: Path, lines: list[str]) -> tuple[list[dict[str, Any]], float]:
    """Every line at once, then end of input straight away: the frames, and the seconds to exit."""
    root, home = small_workspace(tmp_path)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "safeport.context_server", "--root", str(root)],
        input=("\n".join(lines) + "\n").encode(),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={"SAFEPORT_HOME": str(home), "PATH": os.environ["PATH"]},
        timeout=60,
        check=True,
    )
    return [json.loads(line) for line in done.stdout.splitlines()], time.monotonic() - started


def test_requests_in_flight_at_the_end_of_input_are_answered(tmp_path: Path) -> None:
    lines = [
        json.dumps(HELLO),
        '{"jsonrpc":"2.0","method":"notifications/initialized"}',
        call_line(1, "read_file", '{"path":"notes.md"}'),
        call_line(2, "read_file", '{"path":".env"}'),
        call_line(3, "search_project", '{"query":"zebra"}'),
        '{"jsonrpc":"2.0","id":4,"method":"ping"}',
    ]
    frames, _ = run_to_end_of_input(tmp_path, lines)
    answers = {f["id"]: f for f in frames}
    assert sorted(answers) == [0, 1, 2, 3, 4]
    assert all("result" in f for f in frames), frames  # none "Connection closed"
    assert served_text(answers[1]) == "zebra crossing\n"
    assert answers[2]["result"]["isError"] is True
    assert "zebra" in answers[3]["result"]["content"][0]["text"]


def test_a_request_waiting_for_the_client_does_not_hold_the_exit(tmp_path: Path) -> None:
    hello = json.loads(json.dumps(HELLO))
    hello["params"]["capabilities"] = {"roots": {"listChanged": False}}
    lines = [
        json.dumps(hello),
        '{"jsonrpc":"2.0","method":"notifications/initialized"}',
        call_line(1, "read_file", '{"path":"notes.md"}'),  # asks the client for its roots
    ]
    frames, took = run_to_end_of_input(tmp_path, lines)
    assert [f.get("method") for f in frames if "method" in f] == ["roots/list"]
    assert took < CLOSE_WAIT_S + 30  # the wait for it ends; then the process exits cleanly
