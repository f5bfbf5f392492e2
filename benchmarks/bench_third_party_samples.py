"""The secret detector on CredSweeper's labelled samples: recall per rule, flags on the rest.

    python benchmarks/bench_third_party_samples.py [--credsweeper DIR] [--json]

DIR holds CredSweeper's sample files and the findings its own tests expect on them
(https://github.com/Samsung/CredSweeper, MIT): either a checkout (``tests/samples/`` and
``tests/data/output.json``) or the two side by side (``samples/`` and ``expected.json``). Without
``--credsweeper`` the benchmark reads ``../shared/data/credsweeper`` beside the repository when it
is there. Nothing of it is kept in this repository, and no package registry carries it:
CredSweeper's sdists (1.4 to 1.19.5) hold only the package, detect-secrets' and whispers' sdists
no test data. So the set is read from a folder given at run time.

A labelled finding (a sample file, a line, CredSweeper's rule) counts as withheld when the
context server would not serve the file at all (its name is private, or its type is not text:
the read policy's own verdict), or when the detector, scanning the whole file as the server does,
reports a span on that line. Every
other line our detector flags in the samples is counted per file as a flag on a line the labels
do not name (not all such lines are false positives: the labels are CredSweeper's findings, and
its samples hold secrets it leaves to its ML filter). Reported per rule and in total.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from safeport.context_server.index.change_feed import ChangeFeed  # noqa: E402
from safeport.context_server.index.search_index import SearchIndex  # noqa: E402
from safeport.context_server.operations.reads_journal import ReadsJournal  # noqa: E402
from safeport.context_server.operations.service import WorkspaceService  # noqa: E402
from safeport.context_server.policy.read_policy import (  # noqa: E402
    ReadPolicy,
    Refused,
    looks_binary,
)
from safeport.context_server.workspace.gate import Workspace  # noqa: E402
from safeport.context_server.workspace.model import ServedRoot  # noqa: E402
from safeport.shared.secret_scan import find_secrets, redact  # noqa: E402

DEFAULT_SET = REPO.parent / "shared" / "data" / "credsweeper"


def flagged_lines(text: str) -> tuple[dict[int, set[str]], list[str]]:
    """Line number -> the kinds the detector withholds on it; and the lines as served."""
    lines: dict[int, set[str]] = defaultdict(set)
    for span in find_secrets(text):
        first = text.count("\n", 0, span.start) + 1
        for line in range(first, first + text.count("\n", span.start, span.end) + 1):
            lines[line].add(span.kind)
    served, _ = redact(text)
    return lines, served.split("\n")


def survives(value: str, line: int, served: list[str]) -> bool:
    """Whether any part of the labelled value (its first line) is still there, as written, in
    the served line: a span elsewhere on the line does not withhold it, nor one that stops
    short of the value's end."""
    return 0 < line <= len(served) and leaks(value, served[line - 1])


def leaks(value: str, text: str) -> bool:
    """Whether ``text`` holds the value's first line, or any 12 characters of it in a row."""
    first = value.split("\n", 1)[0].strip()
    if len(first) <= 12:
        return bool(first) and first in text
    return any(first[at : at + 12] in text for at in range(0, len(first) - 11, 6))


def layout(folder: Path) -> tuple[Path, Path]:
    """The samples folder and the expected findings, in a checkout or side by side."""
    if (folder / "expected.json").is_file():
        return folder / "samples", folder / "expected.json"
    return folder / "tests" / "samples", folder / "tests" / "data" / "output.json"


def labels(expected: Path) -> dict[str, dict[tuple[int, str], set[str]]]:
    """Sample path (relative to the samples folder) -> (line, value) -> the rules naming it."""
    found: dict[str, dict[tuple[int, str], set[str]]] = defaultdict(lambda: defaultdict(set))
    for candidate in json.loads(expected.read_text()):
        for line in candidate.get("line_data_list", []):
            path = str(line["path"]).removeprefix("./").removeprefix("tests/samples/")
            value = str(line.get("value") or "")
            found[path][(int(line["line_num"]), value)].add(str(candidate["rule"]))
    return found


def refused(policy: ReadPolicy, relative: str, data: bytes) -> str | None:
    """Why the context server would not serve this file at all, if it would not: by name, as
    binary, or by content for a name whose content decides (certificates, public keys)."""
    parts = relative.split("/")
    for name in parts[:-1]:
        verdict = policy.name_verdict(name, "directory")
        if verdict is not None:
            return verdict
    verdict = policy.name_verdict(parts[-1], "file")
    if verdict is None and looks_binary(data[:8192]):
        verdict = "binary"
    if verdict is None:
        verdict = policy.content_verdict(parts[-1], data, len(data))
    return verdict


def evaluate(folder: Path, *, by_name: bool = True) -> dict[str, Any]:
    """The report; ``by_name=False`` scans even the files the read policy would refuse whole
    (the detector alone, as for a workspace whose private files are named like any other)."""
    samples_dir, expected_file = layout(folder)
    labelled = labels(expected_file)
    policy = ReadPolicy()
    per_rule: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    by_refusal: dict[str, int] = defaultdict(int)
    missed: list[str] = []
    unlabelled: dict[str, int] = defaultdict(int)
    samples = sorted(p for p in samples_dir.rglob("*") if p.is_file())
    for path in samples:
        relative = path.relative_to(samples_dir).as_posix()
        data = path.read_bytes()
        expected = labelled.get(relative, {})
        why = refused(policy, relative, data) if by_name else None
        if why is not None:
            for rules in expected.values():
                for rule in rules:
                    per_rule[rule][0] += 1
                    per_rule[rule][1] += 1
                    by_refusal[why] += 1
            continue
        flagged, served = flagged_lines(data.decode("utf-8", errors="replace"))
        for (line, value), rules in expected.items():
            kept = line in flagged and not survives(value, line, served)
            for rule in rules:
                per_rule[rule][0] += kept
                per_rule[rule][1] += 1
                if not kept:
                    missed.append(f"{relative}:{line} {rule}")
        for line in set(flagged) - {line for line, _ in expected}:
            for kind in flagged[line]:
                unlabelled[kind] += 1
    withheld = sum(hit for hit, _ in per_rule.values())
    total = sum(count for _, count in per_rule.values())
    below = {
        rule: f"{hit}/{count}"
        for rule, (hit, count) in sorted(per_rule.items())
        if count >= 3 and hit / count < 0.75
    }
    return {
        "sample_files": len(samples),
        "labelled_findings": total,
        "withheld": withheld,
        "recall": round(withheld / total, 3) if total else None,
        "withheld_by_refusing_the_file": dict(by_refusal),
        "rules_with_3_or_more_below_0.75": below,
        "flags_on_lines_not_labelled": sum(unlabelled.values()),
        "flags_on_lines_not_labelled_by_kind": dict(sorted(unlabelled.items())),
        "per_rule": {rule: f"{hit}/{count}" for rule, (hit, count) in sorted(per_rule.items())},
        "missed": missed,
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def served_line(service: WorkspaceService, path: str, line: int) -> str | None:
    """The line as ``read_file_excerpt`` serves it (every piece of a long one), or None when
    the server refuses the file."""
    pieces: list[str] = []
    column = 1
    try:
        while True:
            excerpt = service.read_file_excerpt(path, line, 1, column)
            pieces.extend(excerpt.lines[:1])
            if excerpt.next_line != line or excerpt.next_column is None:
                return "".join(pieces)
            column = excerpt.next_column
    except Refused:
        return None


def searchable(service: WorkspaceService, path: str, line: int, value: str) -> bool:
    """Whether ``search_project`` for a piece of the value finds that line: the oracle the
    redaction must close (a secret withheld from reads but indexed as written)."""
    first = value.split("\n", 1)[0].strip()
    if len(first) < 6:
        return False
    start = len(first) // 4
    piece = first[start : start + 16]
    try:
        found = service.search_project(piece, ".", 200, None)
    except Refused:
        return False
    return any(hit.path == path and hit.line == line for hit in found.hits)


def evaluate_served(folder: Path) -> dict[str, Any]:
    """The samples served from a workspace by the server's own operations, with its index
    built: a finding is withheld when ``read_file_excerpt`` does not serve its value on its line
    (or refuses the file) and ``search_project`` for a piece of it does not find that line."""
    samples_dir, expected_file = layout(folder)
    labelled = labels(expected_file)
    per_rule: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    missed: list[str] = []
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "ws"
        shutil.copytree(samples_dir, root)
        workspace = Workspace([ServedRoot("ws", root)], ReadPolicy())
        index = SearchIndex(Path(scratch) / "cache" / "index.sqlite", workspace, watch=False)
        journal = ReadsJournal(Path(scratch) / "audit", "bench", [str(root)])
        service = WorkspaceService(workspace, index, ChangeFeed(workspace), journal)
        try:
            index.refresh(everything=True)
            for relative, expected in sorted(labelled.items()):
                for (line, value), rules in sorted(expected.items()):
                    text = served_line(service, relative, line)
                    kept = (text is None or not leaks(value, text)) and not searchable(
                        service, relative, line, value
                    )
                    for rule in rules:
                        per_rule[rule][0] += kept
                        per_rule[rule][1] += 1
                        if not kept:
                            missed.append(f"{relative}:{line} {rule}")
        finally:
            index.close()
            journal.close()
            workspace.close()
    withheld = sum(hit for hit, _ in per_rule.values())
    total = sum(count for _, count in per_rule.values())
    return {
        "withheld": withheld,
        "recall": round(withheld / total, 3) if total else None,
        "rules_with_3_or_more_below_0.75": {
            rule: f"{hit}/{count}"
            for rule, (hit, count) in sorted(per_rule.items())
            if count >= 3 and hit / count < 0.75
        },
        "missed": missed,
    }


# detect-secrets judged in the peer's own interpreter (it may not be installed beside safeport):
# every line any of its default plugins reports, per file.
_DETECT_SECRETS = """
import json, sys
from detect_secrets.core.secrets_collection import SecretsCollection
from detect_secrets.settings import default_settings
found = {}
with default_settings():
    for path in sys.argv[1:]:
        collection = SecretsCollection()
        collection.scan_file(path)
        found[path] = sorted({s.line_number for v in collection.data.values() for s in v})
print(json.dumps(found))
"""


def peer_lines(tool: str, python: str, samples_dir: Path) -> dict[str, set[int]]:
    """Sample path -> the lines the peer reports, run as the peer's users run it."""
    paths = sorted(str(p) for p in samples_dir.rglob("*") if p.is_file())
    if tool == "detect-secrets":
        done = subprocess.run(
            [python, "-c", _DETECT_SECRETS, *paths], capture_output=True, text=True, check=True
        )
        return {
            Path(path).relative_to(samples_dir).as_posix(): set(lines)
            for path, lines in json.loads(done.stdout).items()
        }
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "credsweeper.json"
        subprocess.run(
            [python, "-m", "credsweeper", "--path", str(samples_dir), "--save-json", str(report)],
            capture_output=True,
            text=True,
            check=True,
        )
        found: dict[str, set[int]] = defaultdict(set)
        for candidate in json.loads(report.read_text()):
            for line in candidate.get("line_data_list", []):
                path = Path(line["path"]).resolve().relative_to(samples_dir.resolve())
                found[path.as_posix()].add(int(line["line_num"]))
        return dict(found)


def evaluate_peer(tool: str, python: str, folder: Path) -> dict[str, Any]:
    """A peer's recall on the same labels: a finding counts when the peer reports its line
    (the peers report, they do not redact)."""
    samples_dir, expected_file = layout(folder)
    reported = peer_lines(tool, python, samples_dir)
    per_rule: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    unlabelled = 0
    for relative, expected in labels(expected_file).items():
        lines = reported.get(relative, set())
        for (line, _value), rules in expected.items():
            for rule in rules:
                per_rule[rule][0] += line in lines
                per_rule[rule][1] += 1
    for relative, lines in reported.items():
        unlabelled += len(lines - {line for line, _ in labels(expected_file).get(relative, {})})
    withheld = sum(hit for hit, _ in per_rule.values())
    total = sum(count for _, count in per_rule.values())
    return {
        "reported": withheld,
        "recall": round(withheld / total, 3) if total else None,
        "flags_on_lines_not_labelled": unlabelled,
        "per_rule": {rule: f"{hit}/{count}" for rule, (hit, count) in sorted(per_rule.items())},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--credsweeper", type=Path, default=DEFAULT_SET, help="CredSweeper's samples and labels"
    )
    parser.add_argument("--missed", action="store_true", help="also list each finding missed")
    parser.add_argument(
        "--peers",
        default="",
        help="also run these peers on the same samples: detect-secrets,credsweeper",
    )
    parser.add_argument(
        "--peer-python",
        default=sys.executable,
        help="the interpreter the peers are installed in (the `bench` extra)",
    )
    parser.add_argument("--json", action="store_true", help="(the report is always JSON)")
    args = parser.parse_args()
    if not layout(args.credsweeper)[1].is_file():
        sys.exit(f"{args.credsweeper} holds no expected findings: not CredSweeper's samples")
    report = evaluate(args.credsweeper)
    alone = evaluate(args.credsweeper, by_name=False)
    report["detector_alone"] = {
        key: alone[key]
        for key in ("withheld", "recall", "rules_with_3_or_more_below_0.75", "missed")
    }
    report["detector_alone"]["flags_on_lines_not_labelled"] = alone["flags_on_lines_not_labelled"]
    report["served"] = evaluate_served(args.credsweeper)
    if not args.missed:
        del report["missed"]
        del report["detector_alone"]["missed"]
        del report["served"]["missed"]
    for tool in filter(None, args.peers.split(",")):
        report[tool] = evaluate_peer(tool, args.peer_python, args.credsweeper)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
