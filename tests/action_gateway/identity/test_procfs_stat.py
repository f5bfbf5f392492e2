"""``procfs`` reads a process's start time after its name's *last* ``)``: the name is the
process's own to choose (``/proc/self/comm``), and one that spells fields must not move it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from safeport.action_gateway.identity.procfs import fingerprint, start_time, stat_fields

# Sets its own name, says so, then waits to be told to go.
CHILD = """
import sys
with open("/proc/self/comm", "w") as handle:
    handle.write(sys.argv[1])
print("named", flush=True)
sys.stdin.read()
"""


@contextmanager
def _named(name: str) -> Iterator[int]:
    argv = [sys.executable, "-c", CHILD, name]
    child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdin is not None
    try:
        assert child.stdout.readline().strip() == "named"
        yield child.pid
    finally:
        child.stdin.close()
        child.wait(10)


def _start_time_by_hand(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as handle:
        data = handle.read()
    return int(data[data.rindex(b")") + 1 :].split()[19])


@pytest.mark.parametrize("name", ["plain", "a) R 1 2 3 4 5", ") ) 0 0 (", "x y)z"])
def test_start_time_is_the_field_after_the_name_however_the_name_is_spelled(name: str) -> None:
    with _named(name) as pid:
        assert stat_fields(pid)[0] == name
        assert start_time(pid) == _start_time_by_hand(pid) == int(stat_fields(pid)[19])
        assert fingerprint(pid)[0] == start_time(pid)
        assert fingerprint(pid) == fingerprint(pid)  # the same process reads the same
