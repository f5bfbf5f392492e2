"""The SQL executor's legitimate paths against a real PostgreSQL: a client certificate from the
vault, the card a query is approved on, pooling and closing on lock."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.real_postgres import CERT_USER, Postgres
from safeport.action_gateway.executors.gateway_executor import GatewayExecutor
from safeport.action_gateway.executors.interface import ActionError
from safeport.vault.secrets import SecretBytes, SshKeySecret
from tests.action_gateway.executors.sql_policy import action, password, policy

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.executors.sql"

pytestmark = pytest.mark.integration


def _key_folders() -> set[str]:
    parent = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else Path("/tmp")
    return {entry.name for entry in parent.iterdir() if entry.name.startswith("sp-sql-")}


def test_a_client_certificate_from_the_vault_logs_in_and_its_key_file_is_gone_after(
    postgres: Postgres,
) -> None:
    cert = postgres.client_cert_pem.replace("\n", "\\n")
    parsed = policy(
        postgres, user=CERT_USER, credential="db-key", kind="ssh-key",
        extra=f'client_cert_pem = "{cert}"',
    )  # fmt: skip
    key = SshKeySecret(private_key=SecretBytes(postgres.client_key_pem))
    before = _key_folders()
    executor = GatewayExecutor()
    result = executor.sql_query(action(parsed, "order_count", min_id=0), key)
    assert result.rows == [[4]]
    assert _key_folders() == before  # the key was on disk only for the handshake
    with pytest.raises(ActionError) as refused:  # the same role without the certificate
        executor.sql_query(action(policy(postgres, user=CERT_USER), "order_count", min_id=0),
                           password())  # fmt: skip
    assert refused.value.failure == "auth_failed"
    executor.close_all()


def test_connections_are_pooled_and_closed_on_lock(postgres: Postgres) -> None:
    executor = GatewayExecutor()
    query = action(policy(postgres), "orders_of", customer="bob")
    for _ in range(3):
        assert executor.sql_query(query, password()).rows == [[2, "bob", "99.00", "second",
                                                                "2026-01-03"]]  # fmt: skip
    assert executor.pooled_sql_connections == 1
    with postgres.admin() as admin:
        opened = admin.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'safeport'"
        ).fetchone()
    assert opened is not None and int(str(opened[0])) >= 1
    executor.close_all()  # what a vault lock does
    assert executor.pooled_sql_connections == 0


def test_the_card_shows_the_database_the_statement_and_every_value_inert(
    postgres: Postgres,
) -> None:
    parsed = policy(postgres)
    hostile = "alice\n\u202eevil\x1b[31m"
    lines = {
        line.label: line for line in action(parsed, "orders_of", customer=hostile).card_lines()
    }
    assert lines["database"].text == f"reader@127.0.0.1:{postgres.port}/app (app)"
    assert "WHERE customer = {customer}" in lines["statement"].text
    values = lines["values"]
    assert values.json_text and "\\n" in values.text and "\\u202e" in values.text
    assert "\n  " in values.text and "\u202e" not in values.text and "\x1b" not in values.text
    allowed = policy(postgres, extra='allow_write_privileges = "a shared reporting role"')
    notes = [line.text for line in action(allowed, "order_count", min_id=1).card_lines()]
    assert "role may write: a shared reporting role" in notes
