"""The provider rules one text's hits wake, and the readers of a whole text a hit may need."""

from __future__ import annotations

import functools
from collections import defaultdict

from safeport.shared.secret_scan.prefilter import Anchor
from safeport.shared.secret_scan.private_keys import KeyBlocks
from safeport.shared.secret_scan.providers.rules import TokenRule
from safeport.shared.secret_scan.shapes import Shapes
from safeport.shared.secret_scan.spans import SecretSpan


class TokenRules:
    """The provider rules the hits of one text wake. A rule whose anchor sits inside its token
    (``lead``) is searched once every hit is read, over the lines around its hits: each line
    joins its regions once, however many hits it holds."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines: dict[TokenRule, int] = {}
        self.regions: dict[TokenRule, list[tuple[int, int]]] = defaultdict(list)

    def at(
        self, rules: tuple[TokenRule, ...], start: int, line_start: int, line_end: int
    ) -> list[SecretSpan]:
        """The tokens the rules of an anchor match at ``start``; lead rules note the line."""
        text = self.text
        found = []
        for rule in rules:
            if rule.lead:
                if self.lines.get(rule) != line_start:  # each line once, however many hits
                    self.lines[rule] = line_start
                    region = around(text, line_start, line_end, rule.context_lines)
                    self.regions[rule].append(region)
                continue
            match = rule.pattern.match(text, start)
            if match is not None:
                group = "secret" if "secret" in rule.pattern.groupindex else 0
                if rule.check is None or rule.check(match.group(group)):
                    found.append(SecretSpan(match.start(group), match.end(group), rule.kind))
        return found

    def searched(self) -> list[SecretSpan]:
        """The tokens of the lead rules, over the regions their hits noted."""
        found = []
        for rule, regions in self.regions.items():
            found += _search_regions(self.text, rule, regions)
        return found


class Readers:
    """The readers of a whole text, built the first time a hit needs one (most texts hold no
    key block and no shape, and never pay for either)."""

    def __init__(self, text: str) -> None:
        self.text = text

    @functools.cached_property
    def key_blocks(self) -> KeyBlocks:
        return KeyBlocks(self.text)

    @functools.cached_property
    def shapes(self) -> Shapes:
        return Shapes(self.text)

    def at(self, anchor: Anchor, start: int, end: int, line_start: int) -> list[SecretSpan]:
        """The key block, or the shapes, a key-block or shape anchor's hit at ``start`` wakes."""
        if anchor.key_block:
            found = self.key_blocks.at(start, line_start)
            return [] if found is None else [found]
        return self.shapes.at(anchor.shape, start, end, line_start)


def around(text: str, line_start: int, line_end: int, lines: int) -> tuple[int, int]:
    start, end = line_start, line_end
    for _ in range(lines):
        start = text.rfind("\n", 0, max(start - 1, 0)) + 1
        newline = text.find("\n", end + 1)
        end = len(text) if newline < 0 else newline
    return start, end


def _search_regions(text: str, rule: TokenRule, regions: list[tuple[int, int]]) -> list[SecretSpan]:
    found = []
    reached = -1
    for start, end in regions:  # in text order; a line with many hits is searched once
        if end <= reached:
            continue
        for match in rule.pattern.finditer(text, max(start, reached), end):
            if rule.check is None or rule.check(match.group()):
                found.append(SecretSpan(match.start(), match.end(), rule.kind))
        reached = end
    return found
