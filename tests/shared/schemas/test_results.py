"""Every operation of both sockets has a result model, and `sp` refuses a reply that does not
match it whole: with a clear error, never a crash and never a half-read result."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, get_args

import pytest
from pydantic import BaseModel

from safeport.action_gateway.handlers.control_sock import OPERATIONS
from safeport.errors import WireError
from safeport.gateway_client.control_socket import GatewayClient
from safeport.shared.paths import SafeportPaths, locate
from safeport.shared.schemas import operations as ops
from safeport.shared.schemas.control import control_ops
from safeport.shared.schemas.operations import AGENT_RESULTS, CONTROL_OPS
from safeport.shared.schemas.wire import AgentRequest
from safeport.shared.wire import recv_message, send_message


def test_every_control_operation_has_a_result_model_and_a_handler_that_returns_it() -> None:
    assert set(CONTROL_OPS) == control_ops() == set(OPERATIONS)
    for name, op in CONTROL_OPS.items():
        assert issubclass(op.result, BaseModel), name
        registered = OPERATIONS[name]
        assert registered.op is op
        hints = registered.handler.__annotations__
        assert hints["return"] == op.result.__name__, name
        assert hints["request"] == op.request.__name__, name


def test_every_agent_request_has_a_result_model() -> None:
    assert set(AGENT_RESULTS) == set(get_args(get_args(AgentRequest)[0]))


Impostor = Callable[[dict[str, Any]], SafeportPaths]


@pytest.fixture
def impostor(tmp_path: Path) -> Iterator[Impostor]:
    """A listener on control.sock that answers one request with the given ``ok`` result (the
    client's checks of the listener pass: same user, and no passphrase is sent)."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    paths = locate(env={"SAFEPORT_HOME": str(home)})
    paths.run_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(paths.control_socket))
    server.listen(1)

    def answer(result: dict[str, Any]) -> None:
        conn, _ = server.accept()
        with conn:
            request = recv_message(conn)
            send_message(conn, {"v": 1, "id": request["id"], "ok": True, "result": result})

    def serve(result: dict[str, Any]) -> SafeportPaths:
        threading.Thread(target=answer, args=(result,), daemon=True).start()
        return paths

    try:
        yield serve
    finally:
        server.close()


def _ask(paths: SafeportPaths, op: ops.ControlOp[Any, Any]) -> Any:
    with GatewayClient(paths, timeout=5) as client:
        return client.call(op)


@pytest.mark.parametrize(
    ("op", "result", "where"),
    [
        # A key missing: nothing of the rest is read.
        (ops.VAULT_LOCK, {"vault": "locked"}, "changed"),
        # A key the contract does not name (an impostor's extra instruction).
        (
            ops.GATEWAY_RELOAD,
            {
                "served": None,
                "file": None,
                "file_error": None,
                "pending": False,
                "note": "run this",
            },
            "note",
        ),
        # A wrong type deep inside: a session's pid as text.
        (
            ops.SESSIONS_LIST,
            {
                "sessions": [
                    {
                        "id": "s",
                        "credential": "c",
                        "requester_pid": "CANARY-pid",
                        "requester_exe": "/x",
                        "policy": "p",
                        "age_s": 1,
                        "expires_in_s": 2,
                    }
                ]
            },
            "sessions.0.requester_pid",
        ),
        # The result of another operation.
        (ops.STATUS, {"stopping": True}, "account"),
    ],
)
def test_a_reply_that_does_not_match_its_model_is_refused_whole_naming_where(
    impostor: Impostor, op: ops.ControlOp[Any, Any], result: dict[str, Any], where: str
) -> None:
    with pytest.raises(WireError) as refused:
        _ask(impostor(result), op)
    message = refused.value.message
    assert f"reply to {op.name} does not match its contract" in message and where in message
    assert "CANARY" not in message  # the values are never quoted


def test_a_matching_reply_is_read_as_the_operations_model(
    impostor: Impostor,
) -> None:
    locked = _ask(impostor({"vault": "locked", "changed": True}), ops.VAULT_LOCK)
    assert locked.changed is True and locked.vault == "locked"


def test_sp_reports_a_malformed_reply_as_an_error_not_a_crash(
    impostor: Impostor, tmp_path: Path
) -> None:
    impostor({"pending": "yes", "served": ["not", "a", "digest"]})
    done = subprocess.run(
        [Path(sys.executable).parent / "sp", "gateway", "reload"],
        env={**os.environ, "SAFEPORT_HOME": str(tmp_path / "home")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "does not match its contract" in done.stderr and "Traceback" not in done.stderr
