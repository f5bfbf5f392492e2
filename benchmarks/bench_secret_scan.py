"""The secret detector beside detect-secrets and CredSweeper, on one labelled corpus, in one run.

    python benchmarks/bench_secret_scan.py [--real-mb 20] [--tools ours,detect-secrets,credsweeper]

The corpus (``benchmarks/secret_corpus/``) is generated afresh: provider tokens with random
bodies in five contexts each, private keys from ``cryptography`` in plain, JSON-escaped and
YAML-indented form, random values assigned to secret-like names in 23 file shapes, look-alikes
that are not secrets, and --real-mb of installed packages' files as real code. Every tool sees
the same files in one temporary folder. Reported per tool: recall per category (a sample counts
when the tool reports the line its secret is on), look-alikes flagged, changed lines per 100,000
lines of real code, and throughput on the real code (MB/s, one core; for the peers this includes
their own file reading, and CredSweeper runs as its command). The peers are the ``bench`` extra.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.secret_corpus.corpus import Sample, labelled, real_code_files  # noqa: E402
from safeport.shared.secret_scan import find_secrets  # noqa: E402

Flagged = dict[str, set[int]]  # relative path -> 1-based line numbers reported


def write_corpus(folder: Path, real_mb: float) -> tuple[dict[str, Sample], list[str]]:
    samples: dict[str, Sample] = {}
    for number, sample in enumerate(labelled()):
        name = f"labelled/{number:04d}_{sample.category.replace(':', '_')}.txt"
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(sample.text, encoding="utf-8")
        samples[name] = sample
    real: list[str] = []
    for number, path in enumerate(real_code_files(real_mb)):
        name = f"real/{number:05d}{path.suffix}"
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, folder / name)
        real.append(name)
    return samples, real


def run_ours(folder: Path, names: list[str]) -> tuple[Flagged, float]:
    texts = {name: (folder / name).read_text(encoding="utf-8", errors="replace") for name in names}
    flagged: Flagged = {}
    started = time.process_time()
    for name, text in texts.items():
        lines: set[int] = set()
        for span in find_secrets(text):
            first = text.count("\n", 0, span.start) + 1
            lines.update(range(first, first + text.count("\n", span.start, span.end) + 1))
        flagged[name] = lines
    return flagged, time.process_time() - started


def run_detect_secrets(folder: Path, names: list[str]) -> tuple[Flagged, float]:
    from detect_secrets.core.secrets_collection import SecretsCollection
    from detect_secrets.settings import default_settings

    flagged: Flagged = {}
    started = time.process_time()
    with default_settings():
        for name in names:
            collection = SecretsCollection()
            collection.scan_file(str(folder / name))
            flagged[name] = {
                secret.line_number for found in collection.data.values() for secret in found
            }
    return flagged, time.process_time() - started


def run_credsweeper(folder: Path, names: list[str]) -> tuple[Flagged, float]:
    listing = folder / "credsweeper-files.txt"
    listing.write_text("\n".join(str(folder / name) for name in names))
    report = folder / "credsweeper.json"
    started = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "credsweeper",
            "--path",
            *[str(folder / n) for n in names],
            "--save-json",
            str(report),
            "--jobs",
            "1",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0 or not report.exists():
        raise RuntimeError(done.stderr.strip().splitlines()[-1] if done.stderr else "no report")
    flagged: Flagged = defaultdict(set)
    for candidate in json.loads(report.read_text()):
        for line in candidate.get("line_data_list", []):
            name = str(Path(line["path"]).relative_to(folder))
            flagged[name].add(int(line["line_num"]))
    return dict(flagged), elapsed


TOOLS: dict[str, Callable[[Path, list[str]], tuple[Flagged, float]]] = {
    "ours": run_ours,
    "detect-secrets": run_detect_secrets,
    "credsweeper": run_credsweeper,
}


def score(
    samples: dict[str, Sample], real: list[str], flagged: Flagged, folder: Path
) -> dict[str, object]:
    found: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for name, sample in samples.items():
        group = sample.category.split(":")[0]
        lines = flagged.get(name, set())
        if sample.secret is None:
            found["look-alikes flagged"][0] += bool(lines)
            found["look-alikes flagged"][1] += 1
            continue
        text = sample.text
        index = text.index(sample.secret)
        secret_line = text.count("\n", 0, index) + 1
        found[group][0] += secret_line in lines
        found[group][1] += 1
    real_lines = sum(
        (folder / name).read_text(encoding="utf-8", errors="replace").count("\n") for name in real
    )
    changed = sum(len(flagged.get(name, ())) for name in real)
    row: dict[str, object] = {group: f"{hit}/{total}" for group, (hit, total) in found.items()}
    row["changed lines per 100k real"] = round(changed * 100_000 / max(real_lines, 1), 1)
    row["real lines"] = real_lines
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--real-mb", type=float, default=20.0)
    parser.add_argument("--tools", default="ours,detect-secrets,credsweeper")
    args = parser.parse_args()
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core, for every tool alike
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        samples, real = write_corpus(folder, args.real_mb)
        real_mb = sum((folder / name).stat().st_size for name in real) / 1e6
        results: dict[str, object] = {"load average": os.getloadavg(), "real MB": round(real_mb, 1)}
        for tool in args.tools.split(","):
            try:
                flagged, _ = TOOLS[tool](folder, list(samples))
                real_flagged, seconds = TOOLS[tool](folder, real)
            except Exception as error:  # a peer that cannot run here is reported, not fatal
                results[tool] = {"error": f"{type(error).__name__}: {error}"}
                continue
            row = score(samples, real, {**flagged, **real_flagged}, folder)
            row["MB/s on real code"] = round(real_mb / seconds, 1)
            results[tool] = row
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
