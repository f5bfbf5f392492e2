"""Lines as the parsers count them: a line ends at ``"\\n"`` and nowhere else.

``str.splitlines`` also breaks at ``\\r``, ``\\v``, ``\\f``, ``\\x1c``-``\\x1e``, U+0085, U+2028
and U+2029. TOML (``tomllib``), JSON and the excerpt reader end a line only at ``"\\n"``, so text
split the other way shows a person lines the parser never sees: a comment holding a U+2028
followed by ``[callers]`` looks like a comment and a table header, while TOML reads one comment.
Every line number and every line a human decides on is taken from :func:`split_lines`, and a
character that is no line break to the parser stays inside its line, where it is shown as an
escape (``shared/visible_text.py``).

A ``"\\r"`` just before the ``"\\n"`` stays at the end of its line: TOML takes ``"\\r\\n"`` as
one line ending, and a reviewer is still shown that the bytes differ from a ``"\\n"`` ending.
"""

from __future__ import annotations


def split_lines(text: str, *, keepends: bool = False) -> list[str]:
    """``text``'s lines, broken only at ``"\\n"``; no empty last line after a final ``"\\n"``.

    With ``keepends`` each line keeps its ``"\\n"``, so ``"".join(...)`` gives ``text`` back.
    """
    if not text:
        return []
    lines = text.split("\n")
    last = lines.pop()
    if keepends:
        lines = [line + "\n" for line in lines]
    if last:
        lines.append(last)
    return lines


def line_number(text: str, index: int) -> int:
    """The 1-based line (as :func:`split_lines` counts) holding ``text[index]``."""
    return text.count("\n", 0, index) + 1
