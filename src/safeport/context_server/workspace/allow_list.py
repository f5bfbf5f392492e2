"""Adding fingerprints to ``[secrets] allow`` in ``context.toml``, keeping the person's text.

The file is the person's own (comments, order, other tables): a new entry is written into the
existing ``allow`` array, or a new ``allow`` under an existing ``[secrets]``, or a new table at
the end, each entry with a comment naming where its value is. The result is parsed back before
it is written; a file in a shape this edit does not know is left alone, with the line to add.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence
from pathlib import Path

from safeport.context_server.mcp_clients.install import write_atomically
from safeport.context_server.workspace.serving_config import ContextSettings, load_settings
from safeport.errors import ConfigError

_TABLE = re.compile(r"^[ \t]*\[[ \t]*secrets[ \t]*\][ \t]*(#.*)?$", re.MULTILINE)
_ANY_TABLE = re.compile(r"^[ \t]*\[", re.MULTILINE)
_ALLOW = re.compile(r"^[ \t]*allow[ \t]*=[ \t]*\[", re.MULTILINE)
_UNSAFE_NOTE = re.compile(r"[^\w ./:@+,=-]")


def add_allowed(path: Path, entries: Sequence[tuple[str, str]]) -> list[str]:
    """Add each ``(fingerprint, where)`` not yet allowed; returns the fingerprints added."""
    current = load_settings(path)  # a file that does not parse is reported, never rewritten
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from exc
    new = [(fp, note) for fp, note in dict(entries).items() if fp not in current.secrets.allow]
    if not new:
        return []
    edited = with_allowed(text, new)
    try:
        parsed = ContextSettings.model_validate(tomllib.loads(edited))
    except (tomllib.TOMLDecodeError, ValueError):
        parsed = None
    wanted = [*current.secrets.allow, *(fp for fp, _ in new)]
    if parsed is None or sorted(parsed.secrets.allow) != sorted(wanted):
        lines = ", ".join(f'"{fp}"' for fp, _ in new)
        raise ConfigError(
            f"{path} has [secrets] in a shape this command does not edit",
            hint=f"add {lines} to allow = [...] under [secrets] by hand",
        )
    write_atomically(path, edited)
    return [fp for fp, _ in new]


def with_allowed(text: str, entries: Sequence[tuple[str, str]]) -> str:
    """``text`` with each ``(fingerprint, where)`` written into ``[secrets] allow``."""
    lines = "".join(f'\n    "{fp}",{_note(where)}' for fp, where in entries)
    table = _TABLE.search(text)
    if table is None:
        if text and not text.endswith("\n"):
            text += "\n"
        gap = "\n" if text else ""
        return f"{text}{gap}[secrets]\nallow = [{lines}\n]\n"
    following = _ANY_TABLE.search(text, table.end())
    end = following.start() if following else len(text)
    allow = _ALLOW.search(text, table.end(), end)
    if allow is None:
        at = table.end()
        return f"{text[:at]}\nallow = [{lines}\n]{text[at:]}"
    rest = text[allow.end() :]
    # A note is a comment to the end of its line: what followed "[" goes on the next one.
    if not rest.lstrip(" \t").startswith(("\n", "\r\n")):
        lines += "\n    "
    return text[: allow.end()] + lines + rest


def _note(where: str) -> str:
    """A comment naming the file and line (only when it can be written plainly)."""
    if not where or _UNSAFE_NOTE.search(where):
        return ""
    return f"  # {where}"
