"""What `sp doctor` reports: one check's state, what it found and how to fix it.

Shared so that each component checks its own part (the gateway its files, sockets, policy and
declared hosts; the context server its clients' entries) and the CLI only prints them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

State = Literal["ok", "warn", "fail"]


@dataclass(frozen=True)
class Finding:
    """``ok``, ``warn`` (works, but worth knowing) or ``fail`` (something will not work)."""

    check: str
    state: State
    detail: str
    fix: str = ""


# `sp doctor`'s verdict, as `sp status` gives it: a failed check is a problem (1); otherwise a
# part that is not running or is locked (the gateway, its vault) is down (2); else ok (0).
Verdict = Literal["ok", "problem", "down"]
VERDICT_EXIT_CODES: dict[Verdict, int] = {"ok": 0, "problem": 1, "down": 2}


@dataclass(frozen=True)
class Diagnosis:
    """Every check `sp doctor` made, and what a script branches on."""

    findings: tuple[Finding, ...]
    # The checks whose warning means "down" rather than "worth knowing".
    down_checks: frozenset[str] = frozenset({"gateway", "vault unlocked"})

    @property
    def problems(self) -> int:
        return sum(1 for finding in self.findings if finding.state == "fail")

    @property
    def verdict(self) -> Verdict:
        if self.problems:
            return "problem"
        if any(f.state != "ok" and f.check in self.down_checks for f in self.findings):
            return "down"
        return "ok"

    @property
    def exit_code(self) -> int:
        return VERDICT_EXIT_CODES[self.verdict]

    def as_json(self) -> dict[str, object]:
        """`sp doctor --json`: the shape the CLI reference documents."""
        return {
            "findings": [
                {"check": f.check, "state": f.state, "detail": f.detail, "fix": f.fix}
                for f in self.findings
            ],
            "problems": self.problems,
            "state": self.verdict,
            "exit_code": self.exit_code,
        }
