"""A file's search hits are the same whether its lines are folded one by one or the whole text
at once: a text whose folded copy keeps every index is searched in one pass over that copy, any
other line by line, and both give each line's first match, numbered as `split_lines` counts,
with its snippet."""

from __future__ import annotations

import random

import pytest

from safeport.context_server.operations.searching import HITS_PER_FILE, _hits_in_text, _snippet
from safeport.context_server.operations.tool_results import SearchHit
from safeport.shared.secret_scan import find_secrets
from safeport.shared.secret_scan.spans import SecretSpan
from safeport.shared.text_lines import split_lines

# The package these tests drive (see tests/test_layout.py).
SUBJECT = "safeport.context_server.operations"

PIECES = ["ab", "AB", "aB", "a", "b", "x", " ", "\t", "\r", "\n", "\r\n", "ba", "zz", "-", "aaa"]
# Characters that fold to one other (É, the Kelvin sign, Σ), to two (ß, İ), or not at all.
WIDER = ["é", "É", "\u212a", "k", "ß", "ss", "SS", "\u0130", "i", "\u03a3", "\u03c3", "\u00e6"]


def line_by_line(shown: str, text: str, query: str) -> list[SearchHit]:
    """Each line folded on its own: what every text was searched by before."""
    needle, hits = query.casefold(), []
    for number, line in enumerate(split_lines(text), 1):
        at = line.casefold().find(needle)
        if at >= 0:
            hits.append(SearchHit(path=shown, line=number, snippet=_snippet(line, at, len(query))))
        if len(hits) >= HITS_PER_FILE:
            break
    return hits


def nothing(_text: str) -> list[SecretSpan]:
    return []


@pytest.mark.parametrize("wider", [False, True])
def test_text_folded_whole_gives_the_hits_of_each_line_folded_apart(wider: bool) -> None:
    rng = random.Random(20261207)
    pieces = PIECES + WIDER if wider else PIECES
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 60)))
        if rng.random() < 0.1:
            text += "y" * rng.randrange(150, 400) + "ab"  # a long line: the snippet is cut
        query = rng.choice(["ab", "AB", "a", "aa", "ba b", "b\r", "zz", "x", "aB a", "q", *WIDER])
        ours = _hits_in_text("f.txt", text.encode(), query, nothing)
        assert ours == line_by_line("f.txt", text, query), (text, query)


@pytest.mark.parametrize(
    ("text", "query"),
    [
        ("Straße\nSTRASSE\nstrasse\n", "ss"),  # ß folds to two: each line folded apart
        ("plain STRASSE\nplain\n", "ß"),  # a query folding to two
        ("K\u212a k\nKelvin\n", "k"),  # the Kelvin sign folds to one: the whole text at once
        (
            "\u03a3\u038a\u03a3\u03a5\u03a6\u039f\u03a3\n\u03c3\u03af\u03c3\n",
            "\u03c2",
        ),  # capital, small and final sigma
        ("one\nTwo two TWO\nthree\n" * 5, "two"),  # more lines than a file's hits
    ],
)
def test_folding_beyond_ascii_and_the_hit_limit_give_the_same_hits(text: str, query: str) -> None:
    ours = _hits_in_text("f.txt", text.encode(), query, nothing)
    assert ours == line_by_line("f.txt", text, query)
    assert len(ours) <= HITS_PER_FILE


def test_a_secret_is_withheld_before_the_text_is_searched_either_way() -> None:
    token = "ghp_" + "Xq7" * 12
    text = f"first line\nexport GITHUB_TOKEN={token}\nghp_ alone\n"
    for query in ("ghp_", "Xq7Xq7", "GITHUB_TOKEN"):
        hits = _hits_in_text("f.txt", text.encode(), query, find_secrets)
        assert not any(token in hit.snippet for hit in hits)
        assert not any("Xq7" in hit.snippet for hit in hits), query
    assert [hit.line for hit in _hits_in_text("f.txt", text.encode(), "ghp_", find_secrets)] == [3]
