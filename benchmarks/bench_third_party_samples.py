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
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from safeport.context_server.policy.read_policy import ReadPolicy, looks_binary  # noqa: E402
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
    """Whether the labelled value (its first line) is still there, as written, in the served
    line: a span elsewhere on the line does not withhold it."""
    first = value.split("\n", 1)[0].strip()
    return bool(first) and 0 < line <= len(served) and first in served[line - 1]


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--credsweeper", type=Path, default=DEFAULT_SET, help="CredSweeper's samples and labels"
    )
    parser.add_argument("--missed", action="store_true", help="also list each finding missed")
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
    if not args.missed:
        del report["detector_alone"]["missed"]
        del report["missed"]
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
