"""Allowing a false positive back: find the value a fingerprint (or a file and line) names.

Only a value the scan finds in a served root can be allowed, so a fingerprint copied wrong (or
one for a value that is gone) is refused instead of written; and only a best-effort finding
(``ALLOWABLE_KINDS``): a known token format or a private key is withheld whatever is allowed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from safeport.context_server.operations.secret_report import ScannedText, scanned_files
from safeport.context_server.policy.display_names import display_name
from safeport.context_server.workspace.gate import Workspace
from safeport.errors import UsageError
from safeport.shared.secret_scan import ALLOWABLE_KINDS, fingerprint, is_fingerprint

NOT_ALLOWABLE = (
    "known token formats and private keys are always withheld; only generic assignments "
    "(secret-assignment) may be allowed back"
)
NOT_ALLOWABLE_HINT = (
    "take the secret out of the file, or (loudly) turn redaction off for its whole root "
    "with redaction_off under [secrets] in context.toml"
)


@dataclass(frozen=True)
class AllowedValue:
    """A value to allow back: its fingerprint, its kind, and one place it is written."""

    fingerprint: str
    kind: str
    root: str
    path: str
    line: int
    end_line: int

    @property
    def where(self) -> str:
        return f"{self.root}/{self.path}:{self.line}"


def values_with_fingerprint(workspace: Workspace, key: bytes, wanted: str) -> list[AllowedValue]:
    """Every place in the served roots where the value ``wanted`` fingerprints is written."""
    if not is_fingerprint(wanted):
        raise UsageError(
            "that is not a fingerprint (fp1: and 64 hex digits)",
            hint="copy one from `sp context scan`, or pass --file and --line",
        )
    found = [
        v
        for item in scanned_files(workspace)
        for v in _values(item, key)
        if v.fingerprint == wanted
    ]
    if not found:
        raise UsageError(
            "the fingerprint matches no secret in the served roots",
            hint="run `sp context scan` for the fingerprints of what is there now (the key "
            "that makes them is this machine's own)",
        )
    return _allowable(found)


def values_on_line(workspace: Workspace, key: bytes, file: Path, line: int) -> list[AllowedValue]:
    """The values a scan finds on ``line`` of ``file`` (a path on disk, under a served root)."""
    real = Path(os.path.realpath(file))
    roots = [r for r in workspace.roots if real.is_relative_to(r.path) and real != r.path]
    parts = (
        tuple(display_name(os.fsencode(p)) for p in real.relative_to(roots[0].path).parts)
        if roots
        else ()
    )
    items = []
    if parts:
        # Through the scan's own walk, so a file the policy refuses is refused here too.
        scanned = scanned_files(workspace, start=parts[:-1], only=parts[-1])
        items = [item for item in scanned if item.root == roots[0]]
    if not items:
        raise UsageError(
            f"{file} is not a file the context server serves",
            hint="name a text file under a served root that the read policy does not refuse "
            "(`sp context scan` lists what it refuses, and why)",
        )
    found = [v for v in _values(items[0], key) if v.line <= line <= v.end_line]
    if not found:
        raise UsageError(f"no secret is withheld on line {line} of {file}")
    return _allowable(found)


def _values(item: ScannedText, key: bytes) -> list[AllowedValue]:
    values = []
    for span in item.spans:
        line = item.text.count("\n", 0, span.start) + 1
        end_line = line + item.text.count("\n", span.start, span.end)
        mark = fingerprint(item.text[span.start : span.end], key)
        values.append(AllowedValue(mark, span.kind, item.root.name, item.path, line, end_line))
    return values


def _allowable(found: list[AllowedValue]) -> list[AllowedValue]:
    allowable = [v for v in found if v.kind in ALLOWABLE_KINDS]
    if not allowable:
        kinds = ", ".join(sorted({v.kind for v in found}))
        raise UsageError(f"that value is a {kinds}: {NOT_ALLOWABLE}", hint=NOT_ALLOWABLE_HINT)
    return allowable
