"""Replace each secret with a marker that names its kind and keeps the text's line structure.

The marker is ``[REDACTED:<kind>]``. A secret that spans lines (a key block) becomes one marker per
line, each after the line's own indentation, so the text keeps every ``"\\n"`` it had: line
numbers, excerpts by line and YAML indentation all stay true, and the lines beside a secret are
served byte for byte.

Markers are not padded to the secret's length. Padding would keep columns countable after a
secret on the same line, but it would tell the reader the secret's length, which for generic
passwords narrows a search; line numbers stay exact either way, and columns after a marker shift
by a known amount only on the lines a finding names.
"""

from __future__ import annotations

from safeport.shared.secret_scan.scanner import find_secrets
from safeport.shared.secret_scan.spans import Finding, SecretSpan


def marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def redact(text: str) -> tuple[str, tuple[Finding, ...]]:
    """``text`` with every secret replaced by its marker, and one finding per secret."""
    spans = find_secrets(text)
    if not spans:
        return text, ()
    return redact_spans(text, spans)


def redact_spans(text: str, spans: list[SecretSpan]) -> tuple[str, tuple[Finding, ...]]:
    """``text`` with the given non-overlapping spans (in text order) replaced by markers."""
    pieces: list[str] = []
    findings: list[Finding] = []
    done = 0
    line = 1
    for span in spans:
        line += text.count("\n", done, span.start)
        secret_lines = text.count("\n", span.start, span.end)
        pieces.append(text[done : span.start])
        pieces.append(_masked(text[span.start : span.end], marker(span.kind)))
        findings.append(Finding(span.kind, line, line + secret_lines))
        line += secret_lines
        done = span.end
    pieces.append(text[done:])
    return "".join(pieces), tuple(findings)


def _masked(secret: str, mark: str) -> str:
    lines = secret.split("\n")
    masked = [mark if lines[0].strip() else lines[0]]
    for part in lines[1:]:
        body = part.lstrip(" \t")
        if not body.strip():
            masked.append(part)
            continue
        indent = part[: len(part) - len(body)]
        ending = "\r" if body.endswith("\r") else ""
        masked.append(indent + mark + ending)
    if masked[0] == mark and lines[0].endswith("\r") and len(lines) > 1:
        masked[0] = mark + "\r"
    return "\n".join(masked)
