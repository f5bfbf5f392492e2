"""The secret detector on CredSweeper's labelled samples: recall per rule, flags on the rest.

    python benchmarks/bench_third_party_samples.py --credsweeper DIR [--json]

DIR is a checkout of https://github.com/Samsung/CredSweeper (its ``tests/samples/`` files and
``tests/data/output.json``, the findings CredSweeper's own tests expect on them). Nothing of it is
kept in this repository, and no package registry carries it: CredSweeper's sdists (1.4 to
1.19.5) hold only the package, detect-secrets' and whispers' sdists no test data. So the set is
read from a checkout given at run time.

For each labelled finding (a sample file, a line, CredSweeper's rule) the finding counts as
withheld when the detector, scanning the whole sample file, reports a span on that line. Every
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
sys.path.insert(0, str(REPO))

from safeport.shared.secret_scan import find_secrets  # noqa: E402


def flagged_lines(text: str) -> set[int]:
    lines: set[int] = set()
    for span in find_secrets(text):
        first = text.count("\n", 0, span.start) + 1
        lines.update(range(first, first + text.count("\n", span.start, span.end) + 1))
    return lines


def labels(checkout: Path) -> dict[str, dict[int, set[str]]]:
    """Sample path (relative to the checkout) -> line -> the rules that labelled it."""
    found: dict[str, dict[int, set[str]]] = defaultdict(lambda: defaultdict(set))
    for candidate in json.loads((checkout / "tests" / "data" / "output.json").read_text()):
        for line in candidate.get("line_data_list", []):
            found[line["path"]][int(line["line_num"])].add(str(candidate["rule"]))
    return found


def evaluate(checkout: Path) -> dict[str, Any]:
    labelled = labels(checkout)
    per_rule: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    unlabelled_flags = 0
    samples = sorted(p for p in (checkout / "tests" / "samples").rglob("*") if p.is_file())
    for path in samples:
        relative = path.relative_to(checkout).as_posix()
        text = path.read_text(encoding="utf-8", errors="replace")
        flagged = flagged_lines(text)
        expected = labelled.get(relative, {})
        for line, rules in expected.items():
            for rule in rules:
                per_rule[rule][0] += line in flagged
                per_rule[rule][1] += 1
        unlabelled_flags += len(flagged - set(expected))
    withheld = sum(hit for hit, _ in per_rule.values())
    total = sum(count for _, count in per_rule.values())
    return {
        "sample_files": len(samples),
        "labelled_findings": total,
        "withheld": withheld,
        "recall": round(withheld / total, 3) if total else None,
        "flags_on_lines_not_labelled": unlabelled_flags,
        "per_rule": {rule: f"{hit}/{count}" for rule, (hit, count) in sorted(per_rule.items())},
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--credsweeper", type=Path, required=True, help="a CredSweeper checkout")
    parser.add_argument("--json", action="store_true", help="(the report is always JSON)")
    args = parser.parse_args()
    if not (args.credsweeper / "tests" / "data" / "output.json").is_file():
        sys.exit(f"{args.credsweeper} holds no tests/data/output.json: not a CredSweeper checkout")
    print(json.dumps(evaluate(args.credsweeper), indent=2))


if __name__ == "__main__":
    main()
