"""run_readonly_query end to end: a real gateway process, a real PostgreSQL, a human's approval.

The agent proposes a declared query by name with parameter values; the card shows the
database, the exact statement and the bound values; once approved the gateway runs it as the
least-privileged role and returns only the declared columns, with secrets redacted. Accepting a
policy whose role can write is refused in words. The role's password (the harness's canary)
never appears in a reply, a journal or the gateway's log.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.fakes import CANARY
from harness.gateway import PASSPHRASE, Gateway, decide, wait_card, wait_until
from harness.real_postgres import Postgres
from tests.action_gateway.executors.sql_policy import QUERIES, policy_text

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.executors.sql"

pytestmark = pytest.mark.integration


@pytest.fixture
def gateway(tmp_path: Path, postgres: Postgres) -> Iterator[Gateway]:
    home = tmp_path / "h"
    home.mkdir(mode=0o700)
    gw = Gateway(home)
    gw.write_policy(policy_text(postgres))
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


def test_a_declared_query_runs_after_approval_with_only_its_columns_and_secrets_redacted(
    gateway: Gateway,
) -> None:
    agent = gateway.spawn_agent()
    agent.send(_query("q1", "orders_of", customer="alice"))
    card = wait_card(gateway)
    fields = dict(card["fields"])
    assert card["action"] == "run_readonly_query" and card["effect"] == "read-only"
    assert fields["database"].startswith("reader@127.0.0.1:") and fields["database"].endswith(
        "/app (app)"
    )
    assert "WHERE customer = {customer}" in fields["statement"]
    assert fields["values"] == '{\n  "customer": "alice"\n}'
    assert decide(gateway, card["id"])["ok"]
    reply = agent.next(30)
    result = reply["result"]
    assert result["columns"] == ["id", "total", "note", "created"]  # `customer`: not declared
    assert result["rows"][0] == [1, "12.50", "first", "2026-01-02"]
    assert result["rows"][1][2] == "[REDACTED:github-token]"
    assert result["redacted"] == 1 and result["redactions"][0]["field"] == "rows.1.note"
    # approval = "session": the next call of the process runs without a card.
    again = agent.call(_query("q2", "orders_of", customer="o'brien"), 30)
    assert again["result"]["rows"] == [[4, "1.00", "quote", "2026-01-05"]]
    assert gateway.kinds("sessions").count("approval.decided") == 1
    outcome = [r for r in gateway.journal("actions") if r["kind"] == "action.outcome"]
    assert outcome[-1]["body"]["row_count"] == 1
    agent.exit()
    for path in (gateway.home / "audit").iterdir():
        assert CANARY.encode() not in path.read_bytes()
        assert b"alice" not in path.read_bytes()  # values are journaled as shapes only
    assert CANARY not in gateway.stderr_path.read_text()


def test_a_refused_query_reaches_the_agent_as_a_refusal_without_the_credential(
    gateway: Gateway, postgres: Postgres
) -> None:
    agent = gateway.spawn_agent()
    invalid = agent.call(_query("bad", "order_count", min_id="1; DROP TABLE orders"))
    assert invalid["error"]["code"] == "denied"  # an int param refuses text before any card
    unknown = agent.call(_query("nope", "drop_everything"))
    assert unknown["error"]["code"] == "denied"
    agent.send(_query("big", "series"))
    assert decide(gateway, wait_card(gateway)["id"])["ok"]
    capped = agent.next(30)["result"]
    assert capped["truncated"] and capped["row_count"] < 50
    assert CANARY not in str(invalid) + str(unknown) + str(capped)
    # Declared in the file but not accepted yet: the refusal says what waits.
    added = QUERIES + '[sql.databases.app.queries.drop_everything]\nstatement = "SELECT 1"\n'
    gateway.write_policy(policy_text(postgres, queries=added))
    pending = agent.call(_query("nope2", "drop_everything"))
    assert "waits for a human to run `sp policy accept`" in pending["error"]["reason"]
    agent.exit()


def _accept(gateway: Gateway, text: str) -> dict[str, Any]:
    gateway.write_policy(text)
    status = gateway.control("policy.status")["result"]
    return gateway.control("policy.accept", passphrase=PASSPHRASE, digest=status["file"])


def test_accepting_a_policy_whose_role_can_write_is_refused_until_it_says_why(
    gateway: Gateway, postgres: Postgres
) -> None:
    # The harness vault answers every token credential with the canary: this role's password.
    postgres.role("e2e_writer", CANARY, "GRANT UPDATE ON orders TO e2e_writer")
    served = gateway.control("policy.status")["result"]["served"]
    refused = _accept(gateway, policy_text(postgres, user="e2e_writer"))
    assert not refused["ok"] and "may write to 1 table(s), e.g. public.orders" in str(refused)
    assert CANARY not in str(refused)
    assert gateway.control("policy.status")["result"]["served"] == served
    wrong_ca = _accept(gateway, policy_text(postgres, ca_pem=postgres.other_ca_pem))
    assert not wrong_ca["ok"] and "certificate" in str(wrong_ca)

    reason = "the reporting role, shared with the BI tool"
    extra = f'allow_write_privileges = "{reason}"'
    assert _accept(gateway, policy_text(postgres, user="e2e_writer", extra=extra))["ok"]
    agent = gateway.spawn_agent()
    agent.send(_query("w1", "order_count", min_id=0))
    card = wait_card(gateway)
    assert ["role", f"role may write: {reason}"] in card["fields"]
    assert decide(gateway, card["id"])["ok"]
    assert agent.next(30)["result"]["rows"] == [[4]]
    agent.exit()


def _gateway_connections(postgres: Postgres) -> int:
    with postgres.admin() as admin:
        row = admin.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE application_name = 'safeport' AND usename = 'reader'"
        ).fetchone()
    assert row is not None
    return int(str(row[0]))


def test_the_pooled_connection_is_closed_when_the_vault_locks(
    gateway: Gateway, postgres: Postgres
) -> None:
    agent = gateway.spawn_agent()
    agent.send(_query("c1", "order_count", min_id=0))
    assert decide(gateway, wait_card(gateway)["id"])["ok"]
    assert agent.next(30)["result"]["rows"] == [[4]]
    assert _gateway_connections(postgres) == 1  # pooled, logged in as the role
    assert gateway.control("vault.lock")["ok"]
    wait_until(lambda: _gateway_connections(postgres) == 0, timeout=10)
    locked = agent.call(_query("c2", "order_count", min_id=0))
    assert locked["error"]["code"] == "locked"
    agent.exit()
