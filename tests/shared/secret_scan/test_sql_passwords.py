"""Passwords in SQL statements wherever they are written: a migration, a shell line, a string in
code. ``IDENTIFIED [WITH plugin] BY``, ``[WITH] [ENCRYPTED] PASSWORD``, ``LOGIN PASSWORD``,
``SET PASSWORD … =`` and ``PASSWORD('…')`` each give their literal; a bind parameter, a
variable or a placeholder in the same place reads unchanged. (A MySQL password hash,
``AS '*…'``, is crackable and withheld by its own format: ``test_formats_round_two.py``.)"""

from __future__ import annotations

import time

import pytest

from safeport.shared.secret_scan import find_secrets
from tests.shared.secret_scan.drawn_values import assert_clean, assert_only_secret


@pytest.mark.parametrize(
    "template",
    [
        "CREATE USER 'report'@'%' IDENTIFIED BY '{value}';\n",
        "create user report identified by '{value}'\n",
        "ALTER USER 'app'@'localhost' IDENTIFIED WITH caching_sha2_password BY '{value}';\n",
        "ALTER USER app IDENTIFIED WITH 'mysql_native_password' BY \"{value}\";\n",
        "CREATE USER etl ACCOUNT UNLOCK IDENTIFIED BY {value};\n",
        'cursor.execute("CREATE USER etl IDENTIFIED BY {value}")\n',
        "mysql -e \"GRANT ALL ON app.* TO 'a'@'%' IDENTIFIED BY \\'{value}\\';\"\n",
        "sh -c 'echo CREATE USER etl IDENTIFIED BY {value}\\; >> init.sql'\n",
    ],
)
def test_identified_by(template: str) -> None:
    assert_only_secret(template)


@pytest.mark.parametrize(
    "template",
    [
        "CREATE USER app WITH PASSWORD '{value}';\n",
        "CREATE USER IF NOT EXISTS app WITH ENCRYPTED PASSWORD '{value}' NOSUPERUSER;\n",
        "ALTER ROLE reporting PASSWORD '{value}' VALID UNTIL 'infinity';\n",
        "create role grafana login password '{value}';\n",
        "psql -c \"CREATE ROLE metrics LOGIN PASSWORD '{value}'\"\n",
        "ALTER USER app WITH UNENCRYPTED PASSWORD '{value}';\n",
        "CREATE LOGIN app WITH PASSWORD = '{value}', CHECK_POLICY = OFF;\n",
        "SET PASSWORD FOR 'app'@'%' = '{value}';\n",
        "SET PASSWORD FOR 'app'@'localhost' = PASSWORD('{value}');\n",
        "UPDATE mysql.user SET authentication_string = PASSWORD ('{value}') WHERE User = 'a';\n",
    ],
)
def test_password_keyword(template: str) -> None:
    assert_only_secret(template)


@pytest.mark.parametrize(
    "line",
    [
        "CREATE USER app IDENTIFIED BY '%s';\n",
        "CREATE USER app IDENTIFIED BY :password;\n",
        "CREATE USER app IDENTIFIED BY ?;\n",
        "CREATE ROLE app LOGIN PASSWORD 'changeme';\n",
        "CREATE USER app WITH PASSWORD ${DB_PASSWORD};\n",
        "CREATE USER app WITH PASSWORD 'md5' || md5(:pw);\n",
        "-- the user is identified by name\n",
        "SET PASSWORD FOR 'bob'@'%' = PASSWORD(@new_password);\n",
        "ALTER USER app PASSWORD EXPIRE INTERVAL 90 DAY;\n",
        "msg = \"enter the password 'twice' to confirm\"\n",
        "def reset(password): print('password changed for', user_id_2024)\n",
    ],
)
def test_sql_look_alikes_read_unchanged(line: str) -> None:
    assert_clean(line)


def test_a_long_line_of_sql_near_misses_scans_in_linear_time() -> None:
    line = ("IDENTIFIED BY " * 20_000) + ("WITH PASSWORD " * 20_000) + ("PASSWORD(" * 20_000)
    started = time.process_time()
    assert find_secrets(line) == []
    assert time.process_time() - started < 3.0
