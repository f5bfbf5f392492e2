"""What the context server would withhold from a workspace, for the person who serves it.

The walk is the server's own (``Workspace.walk``, which the search index walks too), judged by
the same read policy and the same rules (``ContentSecrets``): each file an agent could read is
read whole and run through the detector, and each entry the policy refuses is reported with its
reason. The report names kinds, lines and keyed fingerprints, never a value or any part of one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from safeport.context_server.operations.redacting import LOOKAHEAD_BYTES
from safeport.context_server.policy.read_policy import ReadPolicy, looks_binary
from safeport.context_server.workspace.gate import Workspace
from safeport.context_server.workspace.model import ServedRoot
from safeport.context_server.workspace.walk import RefusalHook, WalkedFile
from safeport.shared.secret_scan import (
    ALLOWABLE_KINDS,
    SecretSpan,
    find_secrets,
    fingerprint,
    redact_spans,
)

# (files done, files in all): called every so often and once at the end.
ScanProgress = Callable[[int, int], None]

# Why an entry is left out, in the person's words.
REASONS: dict[str, str] = {
    "credential-name": "private by name (credential files and folders, keys, and their copies)",
    "private-folder": "private: a [private] folder in context.toml",
    "private-pattern": "private: a [private] pattern in context.toml",
    "private": "private by name",
    "private-location": "private: one of safeport's own folders",
    "key-material": "private by content: a certificate or public key file holding a private "
    "key, or anything but certificates, requests and public keys",
    "binary": "not text (a binary type or content)",
    "unreadable-type": "not a readable text type",
    "too-large": "over the size excerpts read: only its head (what read_file serves) is "
    "served, and scanned here",
    "hard-link": "a file with more than one link (never served)",
}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ScanFinding(_Model):
    kind: str = Field(description="What sort of secret (e.g. github-token, secret-assignment).")
    line: int = Field(description="The 1-based line it starts on.")
    end_line: int = Field(description="The line it ends on (a key block spans several).")
    fingerprint: str | None = Field(
        default=None,
        description="Its keyed fingerprint, for `sp context allow`; only kinds that may be "
        "allowed back (generic assignments) have one.",
    )
    served_as_written: bool = Field(
        default=False,
        description="Allowed back by fingerprint, or under a root whose redaction is off.",
    )


class ScannedFile(_Model):
    root: str
    path: str
    findings: list[ScanFinding]


class RefusedEntry(_Model):
    root: str
    path: str
    reason: str = Field(description="The rule's short name (e.g. private-folder, too-large).")
    why: str = Field(description="The same, in words.")


class KindSummary(_Model):
    kind: str = Field(description="What sort of secret (the detector's rule).")
    findings: int = Field(description="How many the scan found.")
    withheld: int = Field(description="How many of them a read withholds.")
    files: int = Field(description="How many files hold at least one.")


class ScannedRoot(_Model):
    name: str
    path: str
    redaction_off: bool


class ScanReport(_Model):
    roots: list[ScannedRoot]
    files_scanned: int
    secrets_found: int
    secrets_withheld: int
    files: list[ScannedFile] = Field(description="Each file holding a secret, in path order.")
    refused: list[RefusedEntry] = Field(description="What the read policy does not serve.")
    kinds: list[KindSummary] = Field(
        description="Per kind of secret: findings, withheld and files; most findings first."
    )


def scan_workspace(workspace: Workspace, progress: ScanProgress | None = None) -> ScanReport:
    """Every secret the server would withhold (or serve, where the person said so), and every
    entry its read policy refuses, over all served roots."""
    files: list[ScannedFile] = []
    refused: list[RefusedEntry] = []
    scanned = 0
    for item in scanned_files(workspace, progress, refused.append):
        scanned += 1
        findings = _findings(workspace, item)
        if findings:
            files.append(ScannedFile(root=item.root.name, path=item.path, findings=findings))
    found = [f for file in files for f in file.findings]
    return ScanReport(
        roots=[
            ScannedRoot(
                name=r.name,
                path=str(r.path),
                redaction_off=r.path in workspace.secrets.unredacted_roots,
            )
            for r in workspace.roots
        ],
        files_scanned=scanned,
        secrets_found=len(found),
        secrets_withheld=sum(1 for f in found if not f.served_as_written),
        files=files,
        refused=refused,
        kinds=summarise_kinds(files),
    )


def summarise_kinds(files: list[ScannedFile]) -> list[KindSummary]:
    """Per kind: how many findings, how many withheld, in how many files; most found first
    (then by name), so the rule that fires most heads the table."""
    findings: Counter[str] = Counter()
    withheld: Counter[str] = Counter()
    holding: Counter[str] = Counter()
    for file in files:
        for found in file.findings:
            findings[found.kind] += 1
            withheld[found.kind] += not found.served_as_written
        holding.update({found.kind for found in file.findings})
    return [
        KindSummary(kind=kind, findings=n, withheld=withheld[kind], files=holding[kind])
        for kind, n in sorted(findings.items(), key=lambda item: (-item[1], item[0]))
    ]


@dataclass(frozen=True)
class ScannedText:
    """One readable file's text as the detector sees it, and the secrets in it."""

    root: ServedRoot
    path: str
    text: str = field(repr=False)
    spans: list[SecretSpan]


def scanned_files(
    workspace: Workspace,
    progress: ScanProgress | None = None,
    refused: Callable[[RefusedEntry], None] | None = None,
    *,
    start: tuple[str, ...] = (),
    only: str | None = None,
) -> Iterator[ScannedText]:
    """Each file of the served roots an agent could read (or the one ``start``/``only``
    names, in every root that has it), read whole; ``refused`` hears of each entry left out."""
    policy = workspace.policy
    total = _count(workspace) if progress is not None else 0
    done = 0
    for root in workspace.roots:

        def heard(parts: tuple[str, ...], reason: str, root: ServedRoot = root) -> None:
            if refused is not None:
                refused(_refused(policy, root, parts, reason))

        def linked(parts: tuple[str, ...], heard: RefusalHook = heard) -> None:
            heard(parts, "hard-link")

        walked = workspace.walk(
            root,
            start,
            head_for=lambda found: _served_bytes(policy, found),
            linked=linked,
            refused=heard,
            only=only,
        )
        for item in walked:
            if not isinstance(item, WalkedFile) or item.head is None:
                continue
            done += 1
            if progress is not None and done % 200 == 0:
                progress(done, max(total, done))
            if looks_binary(item.head):
                heard(item.parts, "binary")
                continue
            if item.size > policy.max_file_bytes:
                heard(item.parts, "too-large")  # its head is still served, and scanned
            text = item.head.decode("utf-8", "replace")
            yield ScannedText(root, item.relative, text, find_secrets(text))
    if progress is not None:
        progress(done, max(total, done))


def _findings(workspace: Workspace, scanned: ScannedText) -> list[ScanFinding]:
    text, spans = scanned.text, scanned.spans
    if not spans:
        return []
    secrets = workspace.secrets
    off = scanned.root.path in secrets.unredacted_roots
    _, lines = redact_spans(text, spans)  # the line numbers a read would report
    findings = []
    for span, where in zip(spans, lines, strict=True):
        mark = None
        if span.kind in ALLOWABLE_KINDS and secrets.key is not None:
            mark = fingerprint(text[span.start : span.end], secrets.key)
        findings.append(
            ScanFinding(
                kind=span.kind,
                line=where.line,
                end_line=where.end_line,
                fingerprint=mark,
                served_as_written=off or secrets.is_allowed(text, span),
            )
        )
    return findings


def _refused(
    policy: ReadPolicy, root: ServedRoot, parts: tuple[str, ...], reason: str
) -> RefusedEntry:
    if reason == "private":
        reason = policy.private_rule(parts[-1]) or reason
    return RefusedEntry(
        root=root.name, path="/".join(parts), reason=reason, why=REASONS.get(reason, reason)
    )


def _served_bytes(policy: ReadPolicy, found: WalkedFile) -> int:
    """How much of a file an agent can read: all of it up to the size excerpts read, else the
    head read_file serves (and the bytes it looks past it for a torn secret)."""
    if found.size <= policy.max_file_bytes:
        return policy.max_file_bytes
    return policy.max_read_bytes + LOOKAHEAD_BYTES


def _count(workspace: Workspace) -> int:
    """How many files the scan will read (the progress bar's total; one more walk, no reads)."""
    return sum(
        1
        for root in workspace.roots
        for item in workspace.walk(root)
        if isinstance(item, WalkedFile)
    )
