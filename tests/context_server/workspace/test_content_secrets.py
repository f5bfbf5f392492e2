"""The per-workspace rules on what is withheld: values allowed back by fingerprint, roots with
redaction turned off, the settings that declare them and the edit that adds to them."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from safeport.context_server.policy.content_secrets import UNREDACTED_ROOTS, ContentSecrets
from safeport.context_server.workspace.allow_list import with_allowed
from safeport.context_server.workspace.serving_config import load_settings
from safeport.errors import ConfigError
from safeport.shared.secret_scan import KEY_BYTES, find_secrets, fingerprint

KEY = bytes(range(KEY_BYTES))
ROOT = Path("/srv/app")
OTHER_ROOT = Path("/srv/lib")
ALLOWED = "Xk9fQ2mLp7Wz4Rt8Vb3N"
NEIGHBOUR = "Hq5Tz8Wm2Kp9Lx3Rv7Jd"
TOKEN = "ghp" + "_" + "Q7x2Lm9Pz4Rt8Vw1Ky6Hn3Bc5Dj0Fg2Sa7Ex"
TEXT = (
    f'api_secret = "{ALLOWED}"\n'
    f'db_password = "{NEIGHBOUR}"\n'
    f'near_secret = "{ALLOWED[:-1]}Q"\n'
    f'github_token = "{TOKEN}"\n'
)


def _rules(*values: str, off: frozenset[Path] = frozenset()) -> ContentSecrets:
    allowed = frozenset(fingerprint(v, KEY) for v in values)
    return ContentSecrets(allowed=allowed, key=KEY, unredacted_roots=off)


def test_an_allowed_value_is_served_and_every_other_secret_stays_withheld() -> None:
    text, findings = _rules(ALLOWED).redact(TEXT, ROOT)
    assert f'api_secret = "{ALLOWED}"' in text
    assert NEIGHBOUR not in text and ALLOWED[:-1] + "Q" not in text and TOKEN not in text
    assert [f.line for f in findings] == [2, 3, 4]


def test_a_known_format_stays_withheld_even_when_its_fingerprint_is_allowed() -> None:
    # The allow list cannot carry a token or a key back: only best-effort kinds are judged.
    text, findings = _rules(TOKEN).redact(TEXT, ROOT)
    assert TOKEN not in text and len(findings) == 4
    key_block = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "b3BlbnNzaC1rZXktdjEAAAAA" * 3 + "\n"
    key_block += "-----END OPENSSH PRIVATE KEY-----\n"
    spans = find_secrets(key_block)
    assert spans and spans[0].kind == "private-key"
    value = key_block[spans[0].start : spans[0].end]
    assert _rules(value).redact(key_block, ROOT)[1]


def test_without_the_key_nothing_is_allowed() -> None:
    rules = ContentSecrets(allowed=frozenset({fingerprint(ALLOWED, KEY)}), key=None)
    assert ALLOWED not in rules.redact(TEXT, ROOT)[0]
    other_key = ContentSecrets(allowed=frozenset({fingerprint(ALLOWED, KEY)}), key=KEY[::-1])
    assert ALLOWED not in other_key.redact(TEXT, ROOT)[0]


def test_a_root_with_redaction_off_is_served_as_written_and_noted() -> None:
    rules = _rules(off=frozenset({ROOT}))
    noted: set[str] = set()
    token = UNREDACTED_ROOTS.set(noted)
    try:
        assert rules.redact(TEXT, ROOT) == (TEXT, ())
        assert noted == {str(ROOT)}
        text, findings = rules.redact(TEXT, OTHER_ROOT)
        assert TOKEN not in text and len(findings) == 4 and noted == {str(ROOT)}
    finally:
        UNREDACTED_ROOTS.reset(token)


def test_the_key_never_shows_in_a_repr() -> None:
    assert repr(KEY) not in repr(_rules(ALLOWED)) and "key=" not in repr(_rules(ALLOWED))


def test_the_rules_digest_is_empty_for_the_defaults_and_differs_with_each_rule() -> None:
    digests = {
        ContentSecrets().rules_digest(),
        _rules(ALLOWED).rules_digest(),
        _rules(NEIGHBOUR).rules_digest(),
        _rules(off=frozenset({ROOT})).rules_digest(),
    }
    assert "" in digests and len(digests) == 4


def test_a_value_written_where_a_fingerprint_belongs_is_a_config_error_that_never_repeats_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "context.toml"
    path.write_text(f'[secrets]\nallow = ["{fingerprint(ALLOWED, KEY)}", "{NEIGHBOUR}"]\n')
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    assert "entry 2 is not a fingerprint" in caught.value.message
    assert NEIGHBOUR not in str(caught.value) and NEIGHBOUR not in (caught.value.hint or "")


def test_redaction_off_is_a_list_of_folders(tmp_path: Path) -> None:
    path = tmp_path / "context.toml"
    path.write_text('[secrets]\nredaction_off = "~/src/app"\n')
    with pytest.raises(ConfigError, match="redaction_off"):
        load_settings(path)


@pytest.mark.parametrize(
    "text",
    [
        "",
        'roots = ["/srv/app"]',
        '[secrets]\nredaction_off = []\n\n[private]\nfolders = ["x"]\n',
        '[secrets]\nallow = ["fp1:' + "b" * 64 + '"]\n',
        '[secrets] # ours\nallow = [\n  "fp1:' + "b" * 64 + '",  # a.py:1\n]\n[private]\n',
        "[secrets]\nallow = []\n",
    ],
)
def test_an_added_fingerprint_keeps_the_rest_of_the_file(text: str) -> None:
    new = "fp1:" + "a" * 64
    edited = with_allowed(text, [(new, "ws/app/x.py:3")])
    before, after = tomllib.loads(text), tomllib.loads(edited)
    old = before.get("secrets", {}).get("allow", [])
    assert sorted(after["secrets"]["allow"]) == sorted([*old, new])
    assert {k: v for k, v in after.items() if k != "secrets"} == {
        k: v for k, v in before.items() if k != "secrets"
    }
    assert "# ws/app/x.py:3" in edited
