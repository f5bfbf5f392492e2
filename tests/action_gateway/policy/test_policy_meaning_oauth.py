"""The diff of meaning gives an OAuth grant's fields a direction: another issuer, endpoint, client
or CA is said as loosening, more scopes too, fewer scopes as tightening."""

from __future__ import annotations

from safeport.action_gateway.policy.meaning import meaning_of_edit
from safeport.shared.schemas.config import parse_gateway_policy

BASE = """
[credentials.tracker]
kind = "oauth"

[credentials.tracker.oauth]
preset = "linear"
client_id = "abc123"
scopes = ["read"]

[http.services.linear]
base_url = "https://api.linear.app"
credential = "tracker"
"""


def _said(before: str | None, after: str) -> list[str]:
    parsed, _ = parse_gateway_policy(after)
    return [change.line() for change in meaning_of_edit(before, parsed)]


def test_more_scopes_loosen_and_fewer_tighten() -> None:
    wider = _said(BASE, BASE.replace('scopes = ["read"]', 'scopes = ["read", "write"]'))
    assert len(wider) == 1 and wider[0].startswith("LOOSENED") and '["write"]' in wider[0]
    narrower = _said(BASE.replace('["read"]', '["read", "admin"]'), BASE)
    assert len(narrower) == 1 and narrower[0].startswith("TIGHTENED")


def test_another_provider_client_or_ca_is_said_as_loosening() -> None:
    edits = [
        ('client_id = "abc123"', 'client_id = "other"'),
        ('preset = "linear"', 'preset = "linear"\nissuer = "https://idp.example.com"'),
        ('preset = "linear"', 'preset = "linear"\ntoken_endpoint = "https://idp.example.com/t"'),
        ('preset = "linear"', 'preset = "linear"\nca_file = "/etc/safeport/ca.pem"'),
        ('preset = "linear"', 'preset = "linear"\nclient_auth = "client_secret_basic"'),
        ('preset = "linear"', 'preset = "linear"\nallow_private_addresses = true'),
        ('preset = "linear"', 'preset = "gitlab"'),
        ('preset = "linear"', 'preset = "linear"\nmax_response_bytes = 100000'),
    ]
    for old, new in edits:
        said = _said(BASE, BASE.replace(old, new))
        assert said and all(line.startswith("LOOSENED") for line in said), (new, said)


def test_a_shorter_timeout_is_a_tightening() -> None:
    said = _said(BASE.replace('scopes = ["read"]', 'scopes = ["read"]\ntimeout_s = 20'), BASE)
    assert said and said[0].startswith("TIGHTENED")
