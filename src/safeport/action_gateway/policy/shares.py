"""Each human's share of what the gateway has a fixed amount of.

With several humans named at install, every limit the gateway keeps for all of them together
(agent.sock and control.sock connections, waiting cards, a credential's rate cap) is also cut
into one share per admitted uid, so one human's agent filling the whole limit can never shut
another human out. The global limit stays the ceiling; a share is ``ceil(ceiling / humans)``,
so a single human keeps the full limit and two humans each get half. Because the shares of
every other uid add up to less than the ceiling whenever the ceiling is at least the number of
humans, a uid under its share always finds room.

Pure decisions; the servers, the approvals and the rate limiter ask them with their counts.
"""

from __future__ import annotations

from dataclasses import dataclass


def share(ceiling: int, humans: int) -> int:
    """The most one uid may hold of ``ceiling`` when ``humans`` uids are served (at least 1)."""
    return max(1, -(-ceiling // max(1, humans)))


@dataclass(frozen=True)
class Verdict:
    """Whether one more fits; when it does not, whose limit is reached."""

    fits: bool
    whose: str = ""  # "user": this uid's share; "all": the ceiling shared by everyone
    held: int = 0
    most: int = 0

    def reason(self, what: str) -> str:
        """``what`` names the thing counted, plural ("waiting approvals", "connections")."""
        if self.whose == "user":
            return f"this user has {self.held} {what}, the most one user may have"
        return f"the gateway has {self.held} {what}, the most it takes"


FITS = Verdict(fits=True)


def one_more(*, held_by_uid: int, held_by_all: int, ceiling: int, humans: int) -> Verdict:
    """May a uid holding ``held_by_uid`` (of ``held_by_all``) take one more of ``ceiling``?

    The uid's own share is checked first: a uid at its share is told so even when the ceiling
    is reached too, since that is what it can change. With one human the share is the ceiling,
    and the ceiling is what is named.
    """
    most = share(ceiling, humans)
    if held_by_uid >= most and most < ceiling:
        return Verdict(fits=False, whose="user", held=held_by_uid, most=most)
    if held_by_all >= ceiling:
        return Verdict(fits=False, whose="all", held=held_by_all, most=ceiling)
    return FITS


def at_share(held: dict[int, int], ceiling: int, humans: int) -> set[int]:
    """The uids holding their whole share: a full control.sock makes room among theirs."""
    most = share(ceiling, humans)
    return {uid for uid, count in held.items() if count >= most}
