"""Fast paths that answer without a pattern where one character (or the ASCII alphabet) says,
held against the patterns they stand for."""

from __future__ import annotations

import itertools
import random
import re
import string

from safeport.shared.secret_scan.checks import _has_sequence
from safeport.shared.secret_scan.word_looks import name_end_at, past_blanks

_NAME = re.compile(r"[\w.\-]{0,64}")
_BLANKS = re.compile(r"[ \t]*")


def _sequence_by_loop(value: str) -> bool:
    up = down = 1
    for previous, current in itertools.pairwise(value):
        step = ord(current) - ord(previous)
        same = previous.isdigit() == current.isdigit() and previous.isalnum() and current.isalnum()
        up = up + 1 if step == 1 and same else 1
        down = down + 1 if step == -1 and same else 1
        if up >= 6 or down >= 6:
            return True
    return False


def test_the_ascii_run_finder_agrees_with_the_loop() -> None:
    draw = random.Random(1208)
    alphabet = string.ascii_letters + string.digits + "-_.:/+=~ "
    for _ in range(20_000):
        value = "".join(draw.choice(alphabet) for _ in range(draw.randint(0, 16)))
        run = draw.choice([string.digits, string.ascii_lowercase, string.ascii_uppercase])
        start = draw.randint(0, len(run) - 1)
        piece = run[start : start + draw.randint(0, 7)]
        value += piece[::-1] if draw.random() < 0.5 else piece
        value += "".join(draw.choice(alphabet) for _ in range(draw.randint(0, 8)))
        assert _has_sequence(value) == _sequence_by_loop(value), value


def test_the_name_and_blank_fast_paths_agree_with_their_patterns() -> None:
    draw = random.Random(712)
    # Characters \\w takes and leaves, in and out of ASCII (a Kelvin sign, a titlecase letter,
    # a combining mark, digits of other scripts).
    alphabet = "aZ09_.- \t:=(\"'\\K\u212a\u01c5\u0301\u0663\u00e9\u3000\u00a0"
    for _ in range(20_000):
        text = "".join(draw.choice(alphabet) for _ in range(draw.randint(1, 12)))
        end = draw.randint(0, len(text))
        line_end = draw.randint(end, len(text))
        name, blanks = _NAME.match(text, end, line_end), _BLANKS.match(text, end, line_end)
        assert name is not None and blanks is not None
        assert name_end_at(text, end, line_end) == name.end(), (text, end, line_end)
        assert past_blanks(text, end, line_end) == blanks.end(), (text, end, line_end)
