"""An approval card as plain lines that read well at 80 columns (rendering only).

Every value arrives from the gateway already inert (control, ANSI and bidi characters escaped,
backslashes doubled); each is passed through :func:`~safeport.shared.visible_text.visible`
again here, so a card never depends on the other side for that. That rule leaves inert text as
it is, so a backslash is not doubled a second time. Labels sit in
one column; a value too long for the line wraps under itself, keeping its own indentation, so
an indented JSON body stays readable; nothing is cut.
"""

from __future__ import annotations

import textwrap
from typing import Any

from safeport.shared.visible_text import line_by_line, visible

LABEL_WIDTH = 11


def card_lines(
    card: dict[str, Any], *, width: int = 80, expires_in_s: int | None = None
) -> list[str]:
    """The card, top to bottom: what would run, what a yes allows, then who asks."""
    left = card.get("expires_in_s") if expires_in_s is None else expires_in_s
    effect = card.get("effect") or ("read-only" if card.get("read_only") else "may change things")
    out: list[str] = [f"── approval requested · card {visible(str(card.get('id')))} "[:width]]
    rows: list[tuple[str, str]] = [
        ("asked by", user_text(card.get("user"))),
        ("action", f"{card.get('action')} {card.get('target')} / {card.get('operation')}"),
        ("effect", str(effect)),
        ("credential", str(card.get("credential"))),
        ("a yes", str(card.get("scope_text") or card.get("scope"))),
        ("time left", f"{left} s" if left is not None else "unknown"),
    ]
    rows += [(str(label), str(value)) for label, value in card.get("fields", [])]
    for index, proc in enumerate(card.get("requester", [])):
        rows.append(("requester" if index == 0 else f"parent {index}", process_text(proc)))
    client = card.get("client")
    if client:
        rows.append(("client", f"pid {client.get('pid')} {client.get('exe')}"))
    for label, value in rows:
        out += _row(visible(label), value, width)
    if not card.get("showable", True):
        out.append("this card cannot be shown whole, so it cannot be approved")
    return out


def user_text(user: object) -> str:
    """The human whose process asks: name and uid (with several humans served, approving
    another's proposal unknowingly is the mistake this line prevents)."""
    if not isinstance(user, dict):
        return "unknown user"
    name = user.get("name")
    return f"{name if name else 'no such user'} (uid {user.get('uid')})"


def process_text(proc: dict[str, Any]) -> str:
    """One process line of a card: digest and what vouches for it once, the script only for an
    interpreter, then every variable that injects code into it (or that none could be read).

    The binary is what the kernel maps, so it is attested; an interpreter's script is what its
    command line says, which the process can rewrite, so it is labelled a claim."""
    digest = (proc.get("sha256") or "unreadable")[:16]
    verified = proc.get("verified") or f"signature {proc.get('signature')}"
    kind = "interpreter (attested) " if proc.get("interpreter") else ""
    words = [f"pid {proc.get('pid')} {kind}{proc.get('exe')} sha256 {digest} ({verified})"]
    if proc.get("interpreter"):
        script_digest = (proc.get("script_sha256") or "-")[:16]
        script_verified = proc.get("script_verified")
        words.append(
            f"script (claimed by the process) {proc.get('script')} sha256 {script_digest}"
            + (f" ({script_verified})" if script_verified else "")
            + (" CHANGED after the process started" if proc.get("script_changed") else "")
        )
    if proc.get("environ") == "unreadable":
        words.append("ENVIRONMENT UNREADABLE")
    for name, value in proc.get("injected_env") or []:
        words.append(f"INJECTS CODE: {name}={value}")
    return "; ".join(words)


def _row(label: str, value: str, width: int) -> list[str]:
    """``label  value``; each of the value's own lines wraps under itself."""
    indent = " " * (LABEL_WIDTH + 1)
    room = max(width - len(indent), 20)
    lines: list[str] = []
    for number, raw in enumerate(line_by_line(visible, value).split("\n")):
        own = raw[: len(raw) - len(raw.lstrip(" "))]
        pieces = textwrap.wrap(
            raw,
            width=room,
            initial_indent="",
            subsequent_indent=own + "  ",
            break_long_words=True,
            break_on_hyphens=False,
            drop_whitespace=False,
            replace_whitespace=False,
        ) or [""]
        for index, piece in enumerate(pieces):
            head = f"{label:<{LABEL_WIDTH}} " if number == 0 and index == 0 else indent
            lines.append((head + piece).rstrip())
    return lines
