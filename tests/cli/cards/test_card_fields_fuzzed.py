"""Every card field, rendered from any value the wire could carry: no crash, no Python ``None``.

A card reaches the view as JSON the gateway built; a field may be absent, null, of another type
or hostile text. Whatever it holds, the card, its short and whole process chains, the outcome
line and the durations render as words a person reads.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from safeport.cli.cards.card_text import (
    card_lines,
    client_text,
    human_duration,
    outcome_text,
    process_brief,
    process_text,
)
from safeport.cli.render import MIN_CARD_WIDTH, columns

# Text that does not itself spell the word the test looks for.
TEXT = st.text(max_size=40).filter(lambda text: "None" not in text)
SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-(10**9), 10**9), TEXT, st.floats())
VALUE = st.recursive(
    SCALAR,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(TEXT, inner, max_size=3)),
    max_leaves=8,
)
PROCESS_KEYS = ["pid", "exe", "sha256", "signature", "verified", "team_id", "interpreter", "script",
                "script_claimed", "script_sha256", "script_verified", "script_changed", "environ",
                "injected_env"]  # fmt: skip
CARD_KEYS = ["id", "user", "scope", "scope_text", "credential", "action", "target", "operation",
             "read_only", "effect", "fields", "showable", "requester", "client", "client_label",
             "expires_in_s", "timeout_s"]  # fmt: skip


def _some_of(keys: list[str], value: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(st.sampled_from(keys), value, max_size=len(keys))


PROCESS = _some_of(PROCESS_KEYS, st.one_of(VALUE, st.lists(st.lists(TEXT, min_size=2, max_size=2))))
CARD = st.fixed_dictionaries(
    {},
    optional={
        **dict.fromkeys(CARD_KEYS, VALUE),
        "requester": st.one_of(VALUE, st.lists(PROCESS, max_size=4)),
        "client": st.one_of(VALUE, PROCESS),
        "user": st.one_of(VALUE, _some_of(["name", "uid"], VALUE)),
        "fields": st.one_of(VALUE, st.lists(st.lists(VALUE, min_size=2, max_size=2), max_size=3)),
    },
)


@settings(max_examples=150, deadline=None)
@given(CARD, st.integers(MIN_CARD_WIDTH, 160), st.booleans(), st.one_of(st.none(), VALUE))
def test_every_card_field_renders_without_none_or_a_crash(
    card: dict[str, Any], width: int, whole_chain: bool, left: Any
) -> None:
    expires = left if isinstance(left, int) and not isinstance(left, bool) else None
    lines = card_lines(card, width=width, expires_in_s=expires, whole_chain=whole_chain)
    text = "\n".join(lines)
    assert "None" not in text
    assert all(columns(line) <= width for line in lines)


@settings(max_examples=150, deadline=None)
@given(PROCESS)
def test_every_process_field_renders_in_both_chains_without_none(proc: dict[str, Any]) -> None:
    for line in (process_brief(proc), process_text(proc), client_text(proc)):
        assert "None" not in line


@given(st.one_of(st.none(), VALUE), st.one_of(st.none(), VALUE))
def test_an_outcome_line_never_says_none(outcome: Any, detail: Any) -> None:
    assert "None" not in outcome_text(outcome, detail)


@given(VALUE)
def test_a_duration_is_words_whatever_it_holds(seconds: Any) -> None:
    assert "None" not in human_duration(seconds)


def test_durations_read_in_the_unit_a_person_expects() -> None:
    # A deadline the gateway could never send is no crash: infinity and NaN read as unknown.
    assert human_duration(float("inf")) == human_duration(float("nan")) == "unknown"
    assert human_duration(43195) == "12 h"
    assert human_duration(59) == "59 s"
    assert human_duration(300) == "5 min"
    assert human_duration(3 * 86400) == "3 d"
    assert human_duration(None) == "unknown"


def test_the_client_row_carries_the_label_of_the_entry_that_started_the_server() -> None:
    card = {"id": "c-1", "client": {"pid": 7, "exe": "/usr/bin/node"}, "client_label": "claude"}
    text = "\n".join(card_lines(card, width=100))
    # Folded, the client's row also says what vouches for it (here: nothing the wire said).
    assert "client      pid 7 /usr/bin/node (signature unknown) · entry claude (claimed)" in text
    whole = "\n".join(card_lines(card, width=100, whole_chain=True))
    assert "client      pid 7 /usr/bin/node · entry claude (claimed)" in whole
    alone = "\n".join(card_lines({"id": "c-2", "client_label": "cursor"}, width=100))
    assert "client      entry cursor (claimed)" in alone


def test_an_outcome_reads_as_verdict_then_detail() -> None:
    assert outcome_text("done", "201") == "done · 201"
    assert outcome_text("refused", None) == "refused · no detail"


def test_a_label_with_a_wide_character_is_padded_by_columns_not_characters() -> None:
    # Found by the property above: the label column was padded by len(), one column short
    # for each character a terminal draws two columns wide.
    lines = card_lines({"fields": [["¡", [None, None]]]}, width=24)
    assert all(columns(line) <= 24 for line in lines)
    row = next(line for line in lines if line.startswith("¡"))
    assert columns(row[: row.index("[")]) == 12  # the value starts where every value does
