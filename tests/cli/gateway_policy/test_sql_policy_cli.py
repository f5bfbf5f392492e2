"""`sp policy check` and `sp policy accept` on a policy with a PostgreSQL database, against a
real `sp gateway run`, a real vault and a real PostgreSQL.

The check says the role is inspected at accept (only the gateway holds the password); the
accept logs in and refuses a role that may write, naming the table and the key that would
allow it, and accepts a least-privileged one. The password never shows.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.real_postgres import Postgres
from tests.action_gateway.executors.sql_policy import policy_text
from tests.cli.running_gateway import running_gateway
from tests.cli.test_real_vault_e2e import home, sp

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.cli.gateway_policy.policy"

__all__ = ["home"]
pytestmark = pytest.mark.integration

PASSWORD = "cli-role-password-8c2f"


def test_accept_refuses_a_role_that_can_write_and_accepts_a_reading_one(
    home: Path, postgres: Postgres
) -> None:
    postgres.role("cli_reader", PASSWORD)
    postgres.role("cli_writer", PASSWORD, "GRANT DELETE ON orders TO cli_writer")
    (home / "db-password").write_text(PASSWORD)
    pw = str(home / "pw")
    added = sp(home, "vault", "add", "db-password", "--kind", "token", "--value-file",
               str(home / "db-password"), "--passphrase-file", pw)  # fmt: skip
    assert added.returncode == 0, added.stderr
    (home / "db-password").unlink()
    with running_gateway(home):
        (home / "gateway.toml").write_text(policy_text(postgres, user="cli_writer"))
        checked = sp(home, "policy", "check")
        assert checked.returncode == 0, checked.stdout + checked.stderr
        assert "its role is inspected when you accept" in checked.stdout
        refused = sp(home, "policy", "accept", "--passphrase-file", pw, "--yes")
        said = refused.stdout + refused.stderr
        assert refused.returncode != 0
        assert "role 'cli_writer' may write to 1 table(s), e.g. public.orders" in said
        assert "allow_write_privileges" in said
        (home / "gateway.toml").write_text(policy_text(postgres, user="cli_reader"))
        accepted = sp(home, "policy", "accept", "--passphrase-file", pw, "--yes")
        assert accepted.returncode == 0, accepted.stdout + accepted.stderr
        outputs = said + checked.stdout + accepted.stdout + accepted.stderr
    for text in (outputs, *(p.read_text(errors="replace") for p in home.rglob("*.jsonl"))):
        assert PASSWORD not in text
