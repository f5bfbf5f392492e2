"""Which processes of a requester's chain a folded card shows (decision only, no text).

A chain is often ten processes deep, and most of them are the same every day: a shell, a
terminal multiplexer, sshd, systemd, each the installed file of its package. A card a person
skims shows what differs from that: the requester, its client (a row of its own), every
ancestor with a warning, and the first other ancestor that is unusual; the rest are counted on
one line. Folding never hides a warning: a process whose environment could not be read, that has
code injected, whose script changed or whose file was modified since installed is always shown,
however many there are. The whole chain is one key (or ``--full``) away, and always in the JSON.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# What vouches for a usual process: the file its package installed, or a valid signature.
USUAL_SIGNATURES = frozenset({"package", "valid"})
# Signature states that are warnings in their own right (the card writes them in capitals).
WARNING_SIGNATURES = frozenset({"modified", "invalid"})


@dataclass(frozen=True)
class FoldedChain:
    """The ancestors a folded card shows, each with its place in the chain (1 is the
    requester's parent), and how many it folds and how many of those are unusual."""

    shown: tuple[tuple[int, dict[str, Any]], ...]
    folded: int
    folded_unusual: int


def has_warning(proc: dict[str, Any]) -> bool:
    """Whether the card must show this process whatever else it folds."""
    injected = proc.get("injected_env")
    return bool(
        proc.get("environ") == "unreadable"
        or (isinstance(injected, list) and injected)
        or proc.get("script_changed")
        or _signature(proc) in WARNING_SIGNATURES
    )


# The interpreters a chain usually holds with no script: the shells a terminal or a client
# starts commands in. Any other interpreter or code host with no script file (`node --require
# …`, `perl -x`, `java -jar`, `gdb -ex 'python …'`, `awk 'BEGIN{system(…)}'`) runs code its
# package does not vouch for, and is shown.
USUAL_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "fish", "ksh", "mksh", "tcsh", "csh"})


def is_usual(proc: dict[str, Any]) -> bool:
    """A package's own file (or a validly signed one), no warning, and no script: an
    interpreter's script is only its own claim, so one running a script is never usual, and
    an interpreter other than a shell is never usual at all."""
    if _signature(proc) not in USUAL_SIGNATURES or has_warning(proc):
        return False
    if not proc.get("interpreter"):
        return True
    program = str(proc.get("exe") or "").rsplit("/", 1)[-1]
    return not proc.get("script") and program in USUAL_SHELLS


def fold_ancestors(chain: list[dict[str, Any]], client: dict[str, Any] | None) -> FoldedChain:
    """Fold ``chain`` (the requester first) for a card that shows the requester and ``client``
    on rows of their own."""
    shown: list[tuple[int, dict[str, Any]]] = []
    folded = folded_unusual = 0
    unusual_shown = False
    for place, proc in enumerate(chain[1:], start=1):
        if client and _same_process(proc, client):
            continue  # on the card's client row, with everything that vouches for it
        if has_warning(proc):
            shown.append((place, proc))
        elif not is_usual(proc) and not unusual_shown:
            shown.append((place, proc))
            unusual_shown = True
        else:
            folded += 1
            folded_unusual += 0 if is_usual(proc) else 1
    return FoldedChain(tuple(shown), folded, folded_unusual)


def _signature(proc: dict[str, Any]) -> str:
    signature = proc.get("signature")
    return signature if isinstance(signature, str) else ""


def _same_process(one: dict[str, Any], other: dict[str, Any]) -> bool:
    return one.get("pid") == other.get("pid") and one.get("exe") == other.get("exe")
