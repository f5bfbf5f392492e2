"""The diff of meaning names SQL databases and queries and says which way each edit goes."""

from __future__ import annotations

from safeport.action_gateway.policy.meaning import meaning_of_edit
from safeport.shared.schemas.config import parse_gateway_policy

BASE = """
[credentials.db]
kind = "token"

[sql.databases.shop]
host = "db.example"
database = "shop"
user = "reader"
credential = "db"
ca_pem = "-----BEGIN CERTIFICATE-----"

[sql.databases.shop.queries.orders_of]
statement = "SELECT id FROM orders WHERE customer = {customer}"
columns = ["id"]
max_rows = 50
params.customer = { type = "int", min = 1, max = 1000 }
"""


def _said(before: str | None, after: str) -> list[str]:
    parsed, _ = parse_gateway_policy(after)
    return [change.line() for change in meaning_of_edit(before, parsed)]


def test_a_new_database_and_its_queries_are_said_as_loosening() -> None:
    said = _said(None, BASE)
    assert any(
        line.startswith("LOOSENED")
        and 'sql database "shop" is added ("reader@db.example:5432/shop")' in line
        for line in said
    )
    assert any('may now propose query "orders_of" of sql database "shop"' in line for line in said)


def test_each_sql_edit_says_its_direction() -> None:
    wider = BASE.replace("max_rows = 50", "max_rows = 500").replace(
        'columns = ["id"]', 'columns = ["id", "email"]'
    )
    wider = wider.replace(
        'user = "reader"', 'user = "reader"\nallow_write_privileges = "shared role"'
    )
    said = _said(BASE, wider)
    assert (
        'LOOSENED   query "orders_of" of sql database "shop" `max_rows` changes from 50 to 500'
        in said
    )
    assert 'LOOSENED   query "orders_of" of sql database "shop" `columns` adds ["email"]' in said
    assert any("`allow_write_privileges` changes from null" in line for line in said)
    narrower = _said(BASE, BASE.replace("max_rows = 50", "max_rows = 5"))
    assert narrower == [
        'TIGHTENED  query "orders_of" of sql database "shop" `max_rows` changes from 50 to 5'
    ]
    session = _said(BASE, BASE.replace("max_rows = 50", 'max_rows = 50\napproval = "session"'))
    assert session == [
        'LOOSENED   query "orders_of" of sql database "shop": one approval now covers every call'
        " of a process for its whole session (was per call)"
    ]
    removed = _said(BASE, BASE.split("[sql.databases.shop.queries.orders_of]")[0])
    assert removed == [
        'TIGHTENED  an agent may no longer propose query "orders_of" of sql database "shop"'
    ]
