"""Whether two trees of the detector find the same secrets: a check for changes meant to be
faster and nothing else.

    python benchmarks/secret_scan_differential.py dump --src SRC --out A.json [--automaton]
    python benchmarks/secret_scan_differential.py compare A.json B.json

``dump`` scans each text with the detector under ``SRC`` (a ``src`` folder: this tree's, or one
exported from another commit with ``git archive``) and writes, per text, digests of the spans
found, of the redacted text and of the prefilter's hits. The texts are the files of the
installed packages up to ``--real-mb`` and of the labelled set (``--labelled``, CredSweeper's
samples when ``../shared/data/credsweeper`` is there), each decoded as the read path decodes
(invalid bytes replaced) and, when that differs, with surrogate escapes. ``--automaton`` turns
the Hyperscan pass off, so the fallback is compared too. ``compare`` counts the texts whose
digests differ; a change that only makes the detector faster leaves every count at 0.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LABELLED = REPO.parent / "shared" / "data" / "credsweeper"


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _paths(real_mb: float, labelled: Path) -> list[Path]:
    sys.path.insert(1, str(REPO))
    from benchmarks.secret_corpus.corpus import real_code_files

    paths = list(real_code_files(real_mb))
    if labelled.is_dir():
        paths += sorted(p for p in labelled.rglob("*") if p.is_file())
    return paths


def dump(src: Path, out: Path, real_mb: float, labelled: Path, automaton: bool) -> None:
    sys.path.insert(0, str(src.resolve()))  # before anything imports safeport
    paths = _paths(real_mb, labelled)
    prefilter = importlib.import_module("safeport.shared.secret_scan.prefilter")
    scanner = importlib.import_module("safeport.shared.secret_scan.scanner")
    redact_spans = importlib.import_module("safeport.shared.secret_scan").redact_spans
    if automaton:
        # Absent from trees before the Hyperscan pass, where this changes nothing.
        setattr(prefilter, "_LITERAL_SCAN", None)  # noqa: B010
    digests: dict[str, list[str]] = {}
    spent = 0.0
    for path in paths:
        data = path.read_bytes()
        replaced = data.decode("utf-8", "replace")
        escaped = data.decode("utf-8", "surrogateescape")
        texts = {"replace": replaced} | ({"escape": escaped} if escaped != replaced else {})
        for mode, text in texts.items():
            started = time.process_time()
            spans = scanner.scan_text(text)
            spent += time.process_time() - started
            redacted = redact_spans(text, spans)[0] if spans else text
            woken = [(start, end, text[start:end]) for start, end, _ in prefilter.hits(text)]
            digests[f"{path}|{mode}"] = [
                _digest(repr(spans)),
                _digest(redacted),
                _digest(repr(woken)),
            ]
    out.write_text(json.dumps(digests))
    where = str(scanner.__file__)
    print(json.dumps({"texts": len(digests), "scan_cpu_s": round(spent, 2), "scanner": where}))


def compare(first: Path, second: Path) -> None:
    a, b = json.loads(first.read_text()), json.loads(second.read_text())
    keys = sorted(set(a) | set(b))
    missing = [k for k in keys if k not in a or k not in b]
    both = [k for k in keys if k in a and k in b]
    report = {
        "texts": len(both),
        "texts_in_one_dump_only": len(missing),
        "spans_differ": sum(a[k][0] != b[k][0] for k in both),
        "redacted_text_differs": sum(a[k][1] != b[k][1] for k in both),
        "prefilter_hits_differ": sum(a[k][2] != b[k][2] for k in both),
    }
    print(json.dumps(report, indent=2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    dumping = commands.add_parser("dump")
    dumping.add_argument("--src", type=Path, default=REPO / "src")
    dumping.add_argument("--out", type=Path, required=True)
    dumping.add_argument("--real-mb", type=float, default=60.0)
    dumping.add_argument("--labelled", type=Path, default=LABELLED)
    dumping.add_argument("--automaton", action="store_true", help="the fallback pass alone")
    comparing = commands.add_parser("compare")
    comparing.add_argument("first", type=Path)
    comparing.add_argument("second", type=Path)
    args = parser.parse_args()
    if args.command == "dump":
        dump(args.src, args.out, args.real_mb, args.labelled, args.automaton)
    else:
        compare(args.first, args.second)


if __name__ == "__main__":
    main()
