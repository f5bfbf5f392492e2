"""The role's own password, read back by a query in any form, against a real PostgreSQL.

The harness's canary is the reader role's password. A query can return it as text, as bytes
(``bytea``, which the reply encodes as base64), hex or base64 text the server encoded itself,
inside a json value with escapes, in an array, or split across two columns; each is withheld
whole, at the executor (the values as the server sent them) and again at the ladder's filter
(the values as the reply encodes them). A value the server refuses and quotes in its error is
redacted before the message is cut, and the failure is the server's (``upstream``), not a
denial.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.fakes import CANARY
from harness.real_postgres import Postgres
from safeport.action_gateway.executors.gateway_executor import GatewayExecutor
from safeport.action_gateway.executors.interface import ActionError
from safeport.action_gateway.ladder.credential_texts import credential_texts
from safeport.action_gateway.ladder.result_filters import withhold_credential
from safeport.shared.known_secrets import secret_forms
from tests.action_gateway.executors.sql_policy import password, policy, unchecked

pytestmark = pytest.mark.integration

PW = f"'{CANARY}'"
# What the server quotes before the value in a failed integer cast.
CAST_PREFIX = 'invalid input syntax for type integer: "'


@pytest.fixture
def executor() -> Iterator[GatewayExecutor]:
    executor = GatewayExecutor()
    yield executor
    executor.close_all()


@pytest.mark.parametrize(
    "statement",
    [
        f"SELECT convert_to({PW}, 'UTF8') AS v",  # bytea: base64 in the reply
        f"SELECT convert_to('a row: ' || {PW} || ' end', 'UTF8') AS v",  # inside longer bytes
        f"SELECT encode(convert_to({PW}, 'UTF8'), 'hex') AS v",
        f"SELECT upper(encode(convert_to({PW}, 'UTF8'), 'hex')) AS v",
        f"SELECT encode(convert_to('xy' || {PW}, 'UTF8'), 'base64') AS v",
        f"SELECT convert_to({PW}, 'UTF8')::text AS v",  # bytea's text form: \\x…
        f"SELECT jsonb_build_object('k', {PW}) AS v",  # a json value, parsed by the driver
        f"SELECT replace(to_json({PW}::text)::text, 'A', '\\u0041') AS v",  # escaped text
        f"SELECT ARRAY['x', {PW}] AS v",  # an array column
        f"SELECT left({PW}, 9) AS v, substr({PW}, 10) AS w",  # split over two columns
        f'SELECT 1 AS "{CANARY}"',  # in a column's name
    ],
)
def test_the_roles_password_is_withheld_in_every_form_a_query_can_return_it(
    postgres: Postgres, executor: GatewayExecutor, statement: str
) -> None:
    parsed = policy(postgres)
    with pytest.raises(ActionError) as caught:
        executor.sql_query(unchecked(parsed, statement, columns=("v", "w")), password())
    assert caught.value.failure == "bad_response" and caught.value.code == "upstream"
    assert CANARY not in str(caught.value)


@pytest.mark.parametrize(
    "statement",
    [
        f"SELECT convert_to({PW}, 'UTF8') AS v",
        f"SELECT encode(convert_to({PW}, 'UTF8'), 'base64') AS v",
        f"SELECT ARRAY[convert_to({PW}, 'UTF8')] AS v",
    ],
)
def test_the_ladders_filter_withholds_the_encoded_result_too(
    postgres: Postgres, statement: str
) -> None:
    """The executor's own check is left out here (no password given to it): the ladder's one
    filter step, on the result as the reply would encode it, withholds it on its own."""
    from safeport.action_gateway.executors.sql.connection import open_connection
    from safeport.action_gateway.executors.sql.query import run_query

    parsed = policy(postgres)
    sql = unchecked(parsed, statement)
    with open_connection("app", sql.database, password()) as conn:
        result = run_query(conn, sql, None)
    with pytest.raises(ActionError) as caught:
        withhold_credential(result, credential_texts(password()))
    assert caught.value.failure == "bad_response"


def test_ordinary_binary_json_and_array_values_still_come_back(
    postgres: Postgres, executor: GatewayExecutor
) -> None:
    parsed = policy(postgres)
    statement = (
        "SELECT convert_to('an ordinary value', 'UTF8') AS v,"
        " jsonb_build_object('k', 'v', 'n', 1) AS w, ARRAY['a', 'b'] AS x,"
        " encode(convert_to('another value', 'UTF8'), 'hex') AS y"
    )
    result = executor.sql_query(unchecked(parsed, statement), password())
    assert result.rows == [
        ["YW4gb3JkaW5hcnkgdmFsdWU=", {"k": "v", "n": 1}, ["a", "b"], "616e6f746865722076616c7565"]
    ]
    withhold_credential(result, credential_texts(password()))  # nothing to withhold


def test_the_password_reversed_is_not_recognised_a_documented_limit(
    postgres: Postgres, executor: GatewayExecutor
) -> None:
    parsed = policy(postgres)
    result = executor.sql_query(unchecked(parsed, f"SELECT reverse({PW}) AS v"), password())
    assert result.rows == [[CANARY[::-1]]]


@pytest.mark.parametrize("keep", [4, 10, 16])
@pytest.mark.parametrize("form", ["raw", "hex"])
def test_an_error_cut_inside_the_password_keeps_none_of_it_and_is_upstream(
    postgres: Postgres, executor: GatewayExecutor, keep: int, form: str
) -> None:
    """The server quotes the value it could not cast; the message is cut at 300 characters,
    aimed to land ``keep`` characters into the password."""
    value = PW if form == "raw" else f"encode(convert_to({PW}, 'UTF8'), 'hex')"
    pad = 299 - len(CAST_PREFIX) - keep
    statement = f"SELECT (repeat('a', {pad}) || {value})::int AS v"
    parsed = policy(postgres)
    with pytest.raises(ActionError) as caught:
        executor.sql_query(unchecked(parsed, statement), password())
    error = caught.value
    assert error.failure == "query_failed" and error.code == "upstream"
    said = error.message.removesuffix("…")
    assert "aaaa" in said and "integer" in said
    for text in secret_forms([CANARY]):
        assert not any(said.endswith(text[:n]) for n in range(1, len(text)))
        assert text[:4] not in said


def test_a_short_refused_value_is_redacted_and_the_rest_of_the_message_kept(
    postgres: Postgres, executor: GatewayExecutor
) -> None:
    parsed = policy(postgres)
    with pytest.raises(ActionError) as caught:
        executor.sql_query(unchecked(parsed, f"SELECT {PW}::int AS v"), password())
    assert caught.value.message == (f"sql database 'app': {CAST_PREFIX}[REDACTED]\"")
    assert caught.value.code == "upstream"
    with pytest.raises(ActionError) as division:
        executor.sql_query(unchecked(parsed, "SELECT 1 / 0 AS v"), password())
    assert (division.value.failure, division.value.code) == ("query_failed", "upstream")


@pytest.mark.parametrize(
    "statement",
    [
        # encode(x, 'base64') wraps at 76 characters; json's text writes the break as \n, here
        # inside the password.
        f"SELECT to_json(encode(convert_to(repeat('y', 50) || {PW}, 'UTF8'), 'base64'))::text AS v",
        f"SELECT row_to_json(t)::text AS v FROM (SELECT encode(convert_to(repeat('y', 50)"
        f" || {PW}, 'UTF8'), 'base64') AS b) t",
    ],
)
def test_wrapped_base64_inside_json_text_is_withheld(
    postgres: Postgres, executor: GatewayExecutor, statement: str
) -> None:
    parsed = policy(postgres)
    with pytest.raises(ActionError) as caught:
        executor.sql_query(unchecked(parsed, statement), password())
    assert caught.value.failure == "bad_response"


# Not ASCII every few characters: bytea's escape format writes each of those as octal escapes.
WIDE = "pässwörd-für-dïe-äpp-ß"
SHORT = "k7Qp2Zx9mW4e"  # 12 characters: shorter than the 16-byte run rule, so matched whole


@pytest.fixture
def roles(postgres: Postgres) -> None:
    """Roles whose passwords are not ASCII and short (made once per server: a role with
    grants cannot simply be dropped and made again)."""
    with postgres.admin() as conn:
        made = {row[0] for row in conn.execute("SELECT rolname FROM pg_roles").fetchall()}
    for name, secret in (("wide_pw", WIDE), ("short_pw", SHORT)):
        if name not in made:
            postgres.role(name, secret)


@pytest.mark.parametrize(
    "expression",
    [
        "encode(convert_to({pw}, 'UTF8'), 'escape')",
        "'prefix ' || encode(convert_to({pw}, 'UTF8'), 'escape')",
        "convert_to({pw}, 'LATIN1')",
        "encode(convert_to({pw}, 'LATIN1'), 'hex')",
        "{pw}",
    ],
)
def test_a_password_not_in_ascii_is_withheld_in_escape_format_and_latin1(
    postgres: Postgres, executor: GatewayExecutor, roles: None, expression: str
) -> None:
    parsed = policy(postgres, user="wide_pw")
    statement = f"SELECT {expression.format(pw=repr(WIDE))} AS v"
    with pytest.raises(ActionError) as caught:
        executor.sql_query(unchecked(parsed, statement), password(WIDE))
    assert caught.value.failure == "bad_response"


@pytest.mark.parametrize(
    "expression",
    [
        "{pw}",
        "upper({pw})",
        "encode(convert_to('ab' || {pw}, 'UTF8'), 'base64')",
        "convert_to('a' || {pw}, 'UTF8')",
        "encode(convert_to({pw}, 'UTF8'), 'hex')",
        "left({pw}, 6) AS v, right({pw}, 6)",  # split over two neighbouring columns
    ],
)
def test_a_short_password_is_withheld_whole(
    postgres: Postgres, executor: GatewayExecutor, roles: None, expression: str
) -> None:
    parsed = policy(postgres, user="short_pw")
    statement = f"SELECT {expression.format(pw=repr(SHORT))} AS w"
    with pytest.raises(ActionError) as caught:
        executor.sql_query(unchecked(parsed, statement, columns=("v", "w")), password(SHORT))
    assert caught.value.failure == "bad_response"
    assert SHORT not in str(caught.value)


@pytest.mark.parametrize("keep", [1, 8, 15])
def test_an_error_whose_first_line_ends_inside_the_password_keeps_none_of_it(
    postgres: Postgres, executor: GatewayExecutor, keep: int
) -> None:
    """Only the error's first line is kept: a line break inside the quoted value is a cut too,
    and fewer than 16 characters of the password are not enough to find it in other forms."""
    statement = f"SELECT (left({PW}, {keep}) || E'\\n' || substr({PW}, {keep + 1}))::int AS v"
    parsed = policy(postgres)
    with pytest.raises(ActionError) as caught:
        executor.sql_query(unchecked(parsed, statement), password())
    said = caught.value.message
    assert CAST_PREFIX in said and caught.value.failure == "query_failed"
    assert not said.endswith(CANARY[:keep]) and CANARY[:keep] not in said.split(CAST_PREFIX)[1]


def test_raise_detail_and_hint_holding_the_password_stay_out_of_the_message(
    postgres: Postgres, executor: GatewayExecutor
) -> None:
    """A function the query calls raises with the password in its message, detail and hint."""
    with postgres.admin() as conn:
        conn.execute(
            "CREATE OR REPLACE FUNCTION raise_with(v text) RETURNS int LANGUAGE plpgsql AS"
            " $$BEGIN RAISE EXCEPTION 'refused %', v USING DETAIL = 'detail ' || v,"
            " HINT = 'hint ' || encode(convert_to(v, 'UTF8'), 'base64'); END$$"
        )
    parsed = policy(postgres)
    with pytest.raises(ActionError) as caught:
        executor.sql_query(unchecked(parsed, f"SELECT raise_with({PW}) AS v"), password())
    assert caught.value.message == "sql database 'app': refused [REDACTED]"
    assert "detail" not in caught.value.message and "hint" not in caught.value.message


@pytest.mark.parametrize("size", [4, 10])
def test_the_password_in_pieces_down_the_rows_of_a_column_is_withheld(
    postgres: Postgres, size: int
) -> None:
    """Another column between the pieces in row order: the ladder's filter reads each column
    down its rows too."""
    from safeport.action_gateway.executors.sql.connection import open_connection
    from safeport.action_gateway.executors.sql.query import run_query

    statement = (
        f"SELECT substr({PW}, g * {size} + 1, {size}) AS v, g AS w"
        f" FROM generate_series(0, {len(CANARY) // size}) g ORDER BY g"
    )
    sql = unchecked(policy(postgres), statement, columns=("v", "w"))
    with open_connection("app", sql.database, password()) as conn:
        result = run_query(conn, sql, None)
    assert len(result.rows) > 1
    with pytest.raises(ActionError) as caught:
        withhold_credential(result, credential_texts(password()))
    assert caught.value.failure == "bad_response"
