"""What a provider format is to the scanner: a kind, the literals the prefilter looks for, a
bounded pattern that starts at one of them, and a check of the value it matched.

Every rule refuses a stand-in written in its own format (``ghp_xxxx…``, AWS's documented
``…EXAMPLE`` id, ``sk-…0123456789``), so documentation and tests that show a token's shape are
served as written; a rule whose real tokens hold a long run of one character by design (Dropbox's
long-lived tokens, Azure's identifiable keys) opts out of the run test only.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from safeport.shared.secret_scan.checks import is_token_stand_in

# A left boundary for short anchors: no letter, digit or underscore before, or the end of a
# terminal colour code (``ESC[93m``), which glues a token to an "m" in pasted CI and tool output.
B = r"(?:(?<![A-Za-z0-9_])|(?<=\[[0-9;]m)|(?<=\[[0-9;]{2}m)|(?<=\[[0-9;]{3}m)|(?<=\[[0-9;]{4}m))"
E = r"(?![A-Za-z0-9])"  # a right boundary for fixed-length bodies


@dataclass(frozen=True)
class TokenRule:
    kind: str
    anchors: tuple[str, ...]  # literals the prefilter finds; the pattern starts at one
    pattern: re.Pattern[str]
    check: Callable[[str], bool] | None = None
    lead: bool = False  # the token starts before its anchor: search the anchor's line
    context_lines: int = 0  # lines around the anchor a lead rule may reach (AWS secret keys)


def rule(
    kind: str,
    anchors: str | tuple[str, ...],
    pattern: str,
    check: Callable[[str], bool] | None = None,
    *,
    lead: bool = False,
    context_lines: int = 0,
    runs: bool = False,
) -> TokenRule:
    """A rule whose matches must pass ``check`` and not be a stand-in; ``runs`` allows long runs
    of one character, which the format itself holds."""
    literals = (anchors,) if isinstance(anchors, str) else anchors

    def accepted(value: str) -> bool:
        # The rule's own check first: it is the cheaper, and refuses most near-misses.
        if check is not None and not check(value):
            return False
        return not is_token_stand_in(value, runs=runs)

    return TokenRule(kind, literals, re.compile(pattern), accepted, lead, context_lines)
