"""What a human reviews is what the parser reads: the text diff splits lines where TOML does and
shows every other break character as an escape, and the diff of meaning compares the parsed
policies, so an edit hidden in the text (a table folded into a comment) is still said in words."""

from __future__ import annotations

import re
import tomllib

import pytest

from harness.gateway import POLICY
from safeport.action_gateway.policy.meaning import meaning_changes, meaning_of_edit
from safeport.action_gateway.policy.review import review
from safeport.action_gateway.policy.store import policy_diff_lines
from safeport.errors import ConfigError
from safeport.shared.schemas.config import GatewayPolicy, GatewaySettings, parse_gateway_policy
from safeport.shared.text_lines import split_lines
from safeport.shared.visible_text import visible_exactly

CALLERS = '\n[callers]\nrules = [{ exe = "/usr/bin/flock" }]\n'
ACCEPTED = POLICY + CALLERS

# Every character `str.splitlines` breaks at although TOML does not.
FOLDS = ["\u2028", "\u2029", "\x85", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"]
MIXED = ["\u2028\x85", "\x85\u2029", "\r\u2028", "\u2029\x0c"]


def folded(text: str, table: str, breaker: str) -> str:
    """``table`` (a block of lines) folded into one comment line joined by ``breaker``."""
    body = breaker.join(line for line in table.strip("\n").split("\n"))
    return text.replace(table, f"\n# kept for reference{breaker}{body}\n")


def changes_said(accepted: str, proposed: str) -> list[str]:
    policy, _ = parse_gateway_policy(proposed)
    return [change.line() for change in meaning_of_edit(accepted, policy)]


@pytest.mark.parametrize("breaker", FOLDS + MIXED)
def test_a_callers_table_folded_into_a_comment_shows_as_removed_in_the_text_diff(
    breaker: str,
) -> None:
    proposed = folded(ACCEPTED, CALLERS, breaker)
    diff = [line.text for line in policy_diff_lines(ACCEPTED, proposed) if line.kind != "same"]
    assert "-[callers]" in diff and '-rules = [{ exe = "/usr/bin/flock" }]' in diff
    added = [line for line in diff if line.startswith("+") and not line.startswith("+++")]
    assert len(added) == 1 and added[0].startswith("+# kept for reference\\u")
    assert all(char.isprintable() for line in diff for char in line)


@pytest.mark.parametrize("breaker", FOLDS + MIXED)
def test_a_fold_the_parser_accepts_is_said_loudly_and_one_it_refuses_cannot_be_accepted(
    breaker: str,
) -> None:
    proposed = folded(ACCEPTED, CALLERS, breaker)
    try:
        said = changes_said(ACCEPTED, proposed)
    except ConfigError:
        # tomllib refuses a bare CR and the C0 controls outside a line ending: such a file
        # never parses, so it can be neither accepted nor served.
        assert any(ord(char) < 0x20 for char in breaker)
        return
    assert said[0].startswith("LOOSENED   THE [callers] TABLE IS REMOVED: ANY process")


@pytest.mark.parametrize(
    ("hidden", "words"),
    [
        ("rate_per_minute = 2\n", 'credential "limited-key": the rate cap is REMOVED (was 2/min)'),
        ("auto_lock_minutes = 0\n", None),  # folding it brings back the default: 480 minutes
        ("session_max_minutes = 60\n", "[gateway] `session_max_minutes` changes from 60 to 720"),
        ('approval = "per-call"\n', None),  # the default is per-call: no change in meaning
    ],
)
def test_limits_folded_into_a_comment_are_said_as_what_they_become(
    hidden: str, words: str | None
) -> None:
    proposed = ACCEPTED.replace(hidden, f"# note\u2028{hidden}", 1)
    said = changes_said(ACCEPTED, proposed)
    if words is None:
        assert all("callers" not in line for line in said)
    else:
        assert any(words in line for line in said), said
        assert any(line.startswith("LOOSENED") and words in line for line in said)


def test_a_restriction_folded_away_after_the_human_added_it_shows_no_restriction() -> None:
    """The human adds a cap and saves; the agent folds it into a comment before the accept:
    the meaning says nothing is capped, so the human sees their restriction is not there."""
    meant = ACCEPTED.replace('kind = "token"\n', 'kind = "token"\nrate_per_minute = 5\n')
    assert any("capped at 5/min" in line for line in changes_said(ACCEPTED, meant))
    swapped = meant.replace("rate_per_minute = 5\n", "# cap\u2029rate_per_minute = 5\n")
    assert changes_said(ACCEPTED, swapped) == []
    diff = [line.text for line in policy_diff_lines(ACCEPTED, swapped) if line.kind == "added"]
    assert diff == ["+# cap\\u2029rate_per_minute = 5"]


def test_ordinary_comments_and_unicode_in_strings_still_parse_and_read_as_written() -> None:
    proposed = ACCEPTED.replace(
        'argv = ["uptime"]',
        "# the load, for the dashboard (é, ü, 中文 are fine here)\n"
        'argv = ["uptime"]\ndescription = "charge sur l\'hôte\u2028ligne deux"',
        1,
    ).replace("\n", "\r\n")
    policy, _ = parse_gateway_policy(proposed)
    said = changes_said(ACCEPTED, proposed)
    assert said == [
        'CHANGED    command "uptime" on ssh host "session-host" `description` changes from "" '
        'to "charge sur l\'h\\u00f4te\\u2028ligne deux"'
    ]
    diff = [line.text for line in policy_diff_lines(ACCEPTED, proposed) if line.kind == "added"]
    assert "+# the load, for the dashboard (é, ü, 中文 are fine here)\\u000d" in diff
    assert '+description = "charge sur l\'hôte\\u2028ligne deux"\\u000d' in diff
    assert policy.ssh.hosts["session-host"].commands["uptime"].description.endswith("deux")


def test_line_numbers_in_problems_are_the_parsers_line_numbers() -> None:
    padding = "# one\u2028two\x85three\u2029four\n"
    text = padding * 3 + ACCEPTED + '\n[credentials.api]\nkind = "basic"\n'
    policy, _ = parse_gateway_policy(text)
    (problem,) = [p for p in review(policy, text, {"api": "token"}) if "'api'" in p.message]
    assert problem.line == text[: text.index("[credentials.api]")].count("\n") + 1
    with pytest.raises(ConfigError) as refused:
        parse_gateway_policy(padding * 3 + "[gateway]\nbogus = 1\n")
    assert "line 5:" in refused.value.diagnostic()
    with pytest.raises(tomllib.TOMLDecodeError, match=r"line 5"):
        tomllib.loads(padding * 3 + "[gateway]\nbogus = = 1\n")


def test_split_lines_ends_a_line_only_where_toml_does() -> None:
    text = "a\u2028b\x85c\rd\x0ce\r\nf\n\ng"
    assert split_lines(text) == ["a\u2028b\x85c\rd\x0ce\r", "f", "", "g"]
    assert "".join(split_lines(text, keepends=True)) == text
    assert split_lines("") == [] and split_lines("x\n") == ["x"]


def test_an_escape_typed_as_text_never_looks_like_a_real_character() -> None:
    real, typed = "x = '\u2028'", "x = '\\u2028'"
    assert visible_exactly(real) != visible_exactly(typed)
    assert visible_exactly(real) == "x = '\\u2028'"
    assert visible_exactly('p = "^\\\\d+$"') == 'p = "^\\\\d+$"'  # a regex reads as typed
    assert visible_exactly("\u202egnp.exe") == "\\u202egnp.exe"


def test_every_gateway_setting_is_compared_even_without_a_sentence_of_its_own() -> None:
    for name, field in GatewaySettings.model_fields.items():
        value = field.default
        other = (not value) if isinstance(value, bool) else "off" if name == "syslog" else 7
        changed = GatewayPolicy(gateway=GatewaySettings.model_validate({name: other}))
        said = meaning_changes(GatewayPolicy(), changed)
        assert said, name


def test_a_field_added_to_the_schema_later_is_reported_generically() -> None:
    class Future(GatewayPolicy):
        new_knob: int = 1

    (change,) = meaning_changes(Future(), Future(new_knob=2))
    assert change.text == "`new_knob` changes from 1 to 2"


def test_nothing_accepted_yet_says_that_any_process_may_propose() -> None:
    policy, _ = parse_gateway_policy(POLICY)
    said = [change.line() for change in meaning_of_edit(None, policy)]
    assert said[0].startswith("LOOSENED   there is no [callers] table: ANY process")
    assert any('may now propose command "uptime" on ssh host "limited-host"' in s for s in said)


def test_callers_rules_added_loosen_and_removed_tighten() -> None:
    wider = ACCEPTED.replace(
        'rules = [{ exe = "/usr/bin/flock" }]',
        'rules = [{ exe = "/usr/bin/flock" }, { uid = 1000 }]',
    )
    (added,) = changes_said(ACCEPTED, wider)
    assert re.fullmatch(r"LOOSENED   a caller rule is added.*: uid = 1000", added)
    (removed,) = changes_said(wider, ACCEPTED)
    assert removed == "TIGHTENED  a caller rule is removed: uid = 1000"
    none = changes_said(ACCEPTED, ACCEPTED.replace('{ exe = "/usr/bin/flock" }', ""))
    assert "TIGHTENED  [callers] rules = []: no process may propose" in none
