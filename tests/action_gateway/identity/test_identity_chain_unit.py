"""The platform-free parts of a probe: walking the parent chain, and the unchanged check."""

from __future__ import annotations

import pytest

from safeport.action_gateway.identity.model import (
    MAX_CHAIN,
    IdentityChanged,
    PeerIdentity,
    ProcessInfo,
    check_unchanged,
    walk_chain,
)


def proc(pid: int) -> ProcessInfo:
    return ProcessInfo(
        pid=pid, start_time=pid, uid=1000, name="p", exe="/usr/bin/p", exe_sha256=None
    )


class Table:
    """A process table: pid -> parent pid; a pid missing from it has exited."""

    def __init__(self, parents: dict[int, int]) -> None:
        self.parents = parents
        self.read: list[tuple[int, bool]] = []

    def __call__(self, pid: int, first: bool) -> tuple[ProcessInfo, int]:
        self.read.append((pid, first))
        if pid not in self.parents:
            raise ProcessLookupError(pid)
        return proc(pid), self.parents[pid]


def test_the_chain_runs_from_the_requester_up_to_pid_1_and_reads_only_the_first_as_first() -> None:
    table = Table({40: 30, 30: 1, 1: 0})
    chain = walk_chain(40, table)
    assert [p.pid for p in chain] == [40, 30, 1]
    assert table.read == [(40, True), (30, False), (1, False)]


def test_a_parent_that_exited_meanwhile_ends_the_chain_there() -> None:
    assert [p.pid for p in walk_chain(40, Table({40: 30, 30: 20}))] == [40, 30]


def test_a_requester_that_cannot_be_read_is_an_error_not_an_empty_chain() -> None:
    with pytest.raises(ProcessLookupError):
        walk_chain(40, Table({}))


def test_the_chain_stops_at_its_cap_even_when_parents_loop() -> None:
    table = Table({7: 8, 8: 7})  # a table that lies cannot make the walk run forever
    assert len(walk_chain(7, table)) == MAX_CHAIN


def test_an_unchanged_fingerprint_passes_and_any_other_is_a_changed_peer() -> None:
    peer = PeerIdentity(uid=1000, gid=1000, chain=(proc(40),), fingerprint=(1, "exe"))
    check_unchanged(peer, (1, "exe"))
    with pytest.raises(IdentityChanged, match="not the one that connected"):
        check_unchanged(peer, (1, "other exe"))
    with pytest.raises(IdentityChanged, match="has exited"):
        check_unchanged(peer, None)


def test_the_launch_role_reads_interpreters_loaders_and_launchers_from_name_and_argv() -> None:
    from safeport.action_gateway.identity.argv import launch_role

    python = launch_role("python3", ["python3", "-I", "/srv/server.py"])
    assert (python.interpreter, python.launcher, python.script) == (True, False, "/srv/server.py")
    npx = launch_role("node", ["node", "/usr/lib/node_modules/npm/bin/npx-cli.js", "server"])
    assert npx.interpreter and npx.launcher  # a runtime running a launcher is a wrapper
    loaded = launch_role("ld-linux-x86-64.so.2", ["ld.so", "--preload", "/tmp/x.so", "/bin/true"])
    assert loaded.loader and loaded.script == "/bin/true"
    assert loaded.loader_options == (("--preload", "/tmp/x.so"),)
    plain = launch_role("claude", ["claude", "-c", "x"])  # -c means nothing to a plain program
    assert (plain.interpreter, plain.launcher, plain.script) == (False, False, None)
    assert launch_role("env", ["env", "python3"]).launcher


def test_a_context_servers_client_label_is_read_from_its_origin_and_nothing_else_has_one() -> None:
    from safeport.action_gateway.identity.argv import client_label

    serve = ["python3", "-I", "-m", "safeport", "context", "serve", "--profile", "agent"]
    assert client_label([*serve, "--origin", "claude-code"]) == "claude-code"
    assert client_label([*serve, "--origin=cursor"]) == "cursor"
    assert client_label(serve) is None
    assert client_label(["node", "cli.js", "--origin", "claude-code"]) is None
    assert client_label([*serve, "--origin", "x" * 200]) == "x" * 64
