"""The role's password read back through a real gateway: as bytes, and quoted in an error.

A table the reader role may read holds its own password (a copy an operator left in a
settings table). A declared query returning it as ``bytea`` is withheld whole, never served as
base64; a declared query that makes PostgreSQL quote it in a cast error, with the cut aimed
inside it, answers ``upstream`` with no piece of it in the reply, the journal or the log.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.fakes import CANARY
from harness.gateway import Gateway, decide, wait_card
from harness.real_postgres import Postgres
from safeport.shared.known_secrets import secret_forms
from tests.action_gateway.executors.sql_policy import QUERIES, policy_text

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.executors.sql"

pytestmark = pytest.mark.integration

# Where the cut at 300 characters lands, counted into the password.
KEEP = 16
PAD = 299 - len('invalid input syntax for type integer: "') - KEEP
LEAK_QUERIES = f"""
[sql.databases.app.queries.setting_bytes]
statement = "SELECT convert_to(value, 'UTF8') AS v FROM sp_settings WHERE name = {{name}}"
columns = ["v"]
params.name = {{ pattern = "^[a-z_]{{1,20}}$" }}

[sql.databases.app.queries.setting_as_number]
statement = "SELECT (repeat('a', {PAD}) || value)::int AS v FROM sp_settings WHERE name = {{name}}"
columns = ["v"]
params.name = {{ pattern = "^[a-z_]{{1,20}}$" }}
"""


@pytest.fixture
def gateway(tmp_path: Path, postgres: Postgres) -> Iterator[Gateway]:
    with postgres.admin() as admin:
        admin.execute("CREATE TABLE IF NOT EXISTS sp_settings (name text PRIMARY KEY, value text)")
        admin.execute(
            "INSERT INTO sp_settings VALUES ('db_password', %s), ('greeting', 'hello')"
            " ON CONFLICT DO NOTHING",
            (CANARY,),
        )
        admin.execute("GRANT SELECT ON sp_settings TO reader")
    home = tmp_path / "h"
    home.mkdir(mode=0o700)
    gw = Gateway(home)
    gw.write_policy(policy_text(postgres, queries=QUERIES + LEAK_QUERIES))
    gw.start("--real-executor")
    gw.unlock()
    gw.accept_policy()
    try:
        yield gw
    finally:
        assert gw.stop() == 0, gw.stderr_path.read_text()


def _query(request_id: str, query: str, **params: str | int) -> dict[str, Any]:
    return {"v": 1, "id": request_id, "type": "propose", "action": "run_readonly_query",
            "database": "app", "query": query, "params": params}  # fmt: skip


def _run(gateway: Gateway, agent: Any, request: dict[str, Any]) -> dict[str, Any]:
    agent.send(request)
    assert decide(gateway, wait_card(gateway)["id"])["ok"]
    reply: dict[str, Any] = agent.next(30)
    return reply


def _no_piece_of_the_password(text: str, size: int = 4) -> None:
    """No form of the password starts in ``text`` (``size`` 8 where hashes and signatures
    share the text, so a random hex or base64 run cannot match by chance)."""
    for form in secret_forms([CANARY]):
        assert form[:size] not in text, form


def test_a_bytea_holding_the_password_is_withheld_and_an_ordinary_one_served(
    gateway: Gateway,
) -> None:
    agent = gateway.spawn_agent()
    ordinary = _run(gateway, agent, _query("q1", "setting_bytes", name="greeting"))
    assert ordinary["result"]["rows"] == [["aGVsbG8="]]
    leaked = _run(gateway, agent, _query("q2", "setting_bytes", name="db_password"))
    assert leaked["error"]["code"] == "upstream"
    assert "withheld" in leaked["error"]["reason"]
    _no_piece_of_the_password(str(leaked))
    agent.exit()
    for path in (gateway.home / "audit").iterdir():
        assert CANARY.encode() not in path.read_bytes()


def test_a_cast_error_cut_inside_the_password_answers_upstream_without_a_piece_of_it(
    gateway: Gateway,
) -> None:
    agent = gateway.spawn_agent()
    reply = _run(gateway, agent, _query("q1", "setting_as_number", name="db_password"))
    error = reply["error"]
    assert error["code"] == "upstream"  # the server refused the value; no policy said no
    assert "invalid input syntax for type integer" in error["reason"]
    _no_piece_of_the_password(error["reason"])
    agent.exit()
    denied = [r["body"] for r in gateway.journal("actions") if r["kind"] == "action.denied"]
    assert denied[-1]["category"] == "upstream_query_failed"
    _no_piece_of_the_password(str(denied[-1]["reason"]))
    _no_piece_of_the_password(gateway.stderr_path.read_text(), 8)
    for path in (gateway.home / "audit").iterdir():
        _no_piece_of_the_password(path.read_text(errors="replace"), 8)
