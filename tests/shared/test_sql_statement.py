"""A declared SQL statement is read as PostgreSQL reads it: refused early, in words, when it is
not one read-only query; rendered for the driver with every value bound, never spliced."""

from __future__ import annotations

import pytest

from safeport.errors import ConfigError
from safeport.shared.schemas.config import parse_gateway_policy
from safeport.shared.sql_statement import StatementRefused, check_statement, driver_text

LEGITIMATE = [
    "SELECT id FROM orders WHERE customer = {customer}",
    "WITH recent AS (SELECT * FROM orders WHERE created > now() - interval '7 days')"
    " SELECT count(*) FROM recent WHERE customer = {customer}",
    "VALUES ({customer})",
    "TABLE orders",
    "SELECT CASE WHEN total > 10 THEN 'big' ELSE 'small' END FROM orders WHERE note = {customer}",
    "SELECT 'update; delete; commit' AS words FROM orders WHERE note = {customer}",
    'SELECT "update", "set" FROM orders WHERE customer = {customer}',
    "SELECT $$ ; drop table x; $$ AS text FROM orders WHERE customer = {customer}",
    "SELECT jsonb_set('{}', '{a}', '1') FROM orders WHERE note LIKE 'a%' || {customer}",
    "-- a comment that says DELETE; COMMIT\nSELECT 1 WHERE {customer} IS NOT NULL",
    "SELECT 1 /* FOR UPDATE; /* nested */ ; */ WHERE {customer} IS NOT NULL",
    "select e'it\\'s; fine' where {customer} is not null",
    "select e'it\\'s'\n  ' fine' where {customer} is not null",
]


@pytest.mark.parametrize("statement", LEGITIMATE)
def test_a_reading_statement_is_declared(statement: str) -> None:
    check_statement(
        statement, frozenset({"customer"}) if "{customer}" in statement else frozenset()
    )


@pytest.mark.parametrize(
    ("statement", "said"),
    [
        ("SELECT 1; COMMIT", "no `;`"),
        ("SELECT 1; SET TRANSACTION READ WRITE; DELETE FROM orders", "no `;`"),
        ("SELECT 1 -- fine\n; DELETE FROM orders", "no `;`"),
        ("DELETE FROM orders", "must begin with SELECT"),
        ("COMMIT", "must begin with SELECT"),
        ("/* SELECT */ UPDATE orders SET total = 0", "must begin with SELECT"),
        ("WITH gone AS (DELETE FROM orders RETURNING *) SELECT * FROM gone", "DELETE"),
        ("WITH x AS (INSERT INTO orders VALUES (1) RETURNING id) SELECT id FROM x", "INSERT"),
        ("SELECT * FROM orders FOR UPDATE", "UPDATE"),
        ("SELECT * FROM orders FOR SHARE NOWAIT", "NOWAIT, SHARE"),
        ("SELECT * INTO copied FROM orders", "INTO"),
        ("SELECT pg_read_file('/etc/passwd')", "pg_read_file"),
        ("SELECT * FROM pg_ls_dir('.')", "pg_ls_dir"),
        ("SELECT lo_export(1, '/tmp/x')", "lo_export"),
        ("SELECT set_config('statement_timeout', '0', false)", "set_config"),
        ("SELECT pg_sleep(100)", "pg_sleep"),
        ("SELECT * FROM dblink('host=x', 'select 1') AS t(a int)", "dblink"),
        ("SELECT nextval('order_ids')", "nextval"),
        ("SELECT PG_READ_FILE('/etc/passwd')", "pg_read_file"),
        ("SELECT E'a'\v'b'", "vertical tab"),
        ("SELECT 'open", "not closed"),
        ('SELECT "open', "not closed"),
        ("SELECT 1 /* open", "not closed"),
        ("SELECT $tag$ open", "not closed"),
    ],
)
def test_a_statement_that_is_not_one_reading_query_is_refused_in_words(
    statement: str, said: str
) -> None:
    with pytest.raises(StatementRefused, match=said.replace("(", r"\(")):
        check_statement(statement, frozenset())


@pytest.mark.parametrize(
    ("statement", "said"),
    [
        ('SELECT "pg_advisory_lock"(42)', "pg_advisory_lock"),
        ("SELECT pg_catalog.\"pg_read_file\"('postgresql.auto.conf')", "pg_read_file"),
        ('SELECT U&"pg\\005fsleep"(100)', "pg_sleep"),
        ("SELECT u&\"pg_\\+00006Cs_dir\"('.')", "pg_ls_dir"),
        ("SELECT U&\"pg!005fsleep\" UESCAPE '!' (100)", "UESCAPE"),
        ("SELECT * FROM ts_stat({q})", "ts_stat"),
        ("SELECT ts_rewrite('a'::tsquery, {q})", "ts_rewrite"),
        # A dollar tag may hold non-ASCII letters: the server reads $é$'$é$ as one string.
        ("SELECT $é$'$é$ AS v, pg_advisory_lock(1) AS w, $é$'$é$ AS x", "pg_advisory_lock"),
        # A line comment ends at a carriage return too, as the server reads it.
        ("SELECT 1 AS v --\r, pg_advisory_lock(1) AS w", "pg_advisory_lock"),
        # A string continued on the next line keeps E'' escapes: \' does not end it.
        ("SELECT E'a'\n'\\' AS v, ' , pg_advisory_lock(1) AS w --'", "pg_advisory_lock"),
        ("SELECT E'a' -- c\n\t'\\' AS v, ' , pg_advisory_lock(1) AS w --'", "pg_advisory_lock"),
    ],
)
def test_a_refused_function_is_refused_by_its_quoted_name_or_when_it_runs_a_value_as_sql(
    statement: str, said: str
) -> None:
    params = frozenset({"q"}) if "{q}" in statement else frozenset()
    with pytest.raises(StatementRefused, match=said):
        check_statement(statement, params)
    # Legitimate: a quoted column named like nothing refused, and to_tsvector on a value.
    check_statement('SELECT "Pg_Sleep", to_tsvector({q}) FROM t', frozenset({"q"}))


def test_placeholders_count_only_outside_strings_and_comments() -> None:
    check_statement("SELECT '{a}' WHERE x = {b} -- {c}", frozenset({"b"}))
    with pytest.raises(StatementRefused, match="undeclared params: \\['b'\\]"):
        check_statement("SELECT 1 WHERE x = {b}", frozenset())
    with pytest.raises(StatementRefused, match="never used in the statement: \\['a'\\]"):
        check_statement("SELECT '{a}'", frozenset({"a"}))


def test_the_driver_text_binds_every_placeholder_and_keeps_every_percent_literal() -> None:
    assert driver_text("SELECT 'a%' WHERE x = {b} AND y LIKE '{b}%' -- 100% {b}") == (
        "SELECT 'a%%' WHERE x = %(b)s AND y LIKE '{b}%%' -- 100%% {b}"
    )
    assert driver_text("SELECT 5 % 2") == "SELECT 5 %% 2"


def _policy(statement: str, params: str = "") -> str:
    return f"""
[credentials.db]
kind = "token"
[sql.databases.app]
host = "db.example"
database = "app"
user = "reader"
credential = "db"
ca_pem = "-----BEGIN CERTIFICATE-----"
[sql.databases.app.queries.q]
statement = "{statement}"
{params}
"""


def test_the_policy_refuses_a_writing_statement_with_the_key_and_the_reason() -> None:
    parsed, _ = parse_gateway_policy(_policy("SELECT 1"))
    assert parsed.sql.databases["app"].queries["q"].read_only
    with pytest.raises(ConfigError, match=r"sql\.databases\.app\.queries\.q.*may not use DELETE"):
        parse_gateway_policy(_policy("WITH d AS (DELETE FROM t RETURNING 1) SELECT 1"))


def test_a_database_takes_a_password_or_with_a_certificate_a_key() -> None:
    with pytest.raises(ConfigError, match="needs a ssh-key credential, not token"):
        parse_gateway_policy(
            _policy("SELECT 1").replace(
                'user = "reader"',
                'user = "reader"\nclient_cert_pem = "-----BEGIN CERTIFICATE-----"',
            )
        )
    with pytest.raises(ConfigError, match="undeclared credential"):
        parse_gateway_policy(_policy("SELECT 1").replace('credential = "db"', 'credential = "x"'))
    with pytest.raises(ConfigError, match="ca_pem"):
        parse_gateway_policy(
            _policy("SELECT 1").replace('ca_pem = "-----BEGIN CERTIFICATE-----"', "")
        )
