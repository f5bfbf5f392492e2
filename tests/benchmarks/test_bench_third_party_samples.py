"""The third-party sample evaluation reads a checkout in CredSweeper's layout and scores it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from benchmarks.secret_corpus.tokens import TOKENS

REPO = Path(__file__).resolve().parents[2]


def _finding(rule: str, path: str, line: int) -> dict[str, object]:
    return {"rule": rule, "line_data_list": [{"path": path, "line_num": line}]}


def test_labelled_findings_are_scored_per_rule_and_other_flags_counted(tmp_path: Path) -> None:
    samples = tmp_path / "tests" / "samples"
    samples.mkdir(parents=True)
    (tmp_path / "tests" / "data").mkdir()
    token = TOKENS["github-classic"]()
    stray = TOKENS["slack-bot"]()
    (samples / "github").write_text(f"# a sample\nGITHUB = '{token}'\n")
    (samples / "words").write_text("name:master pw:correct horse\n")
    (samples / "other").write_text(f"SLACK = '{stray}'\n")
    output = [
        _finding("Github Classic Token", "tests/samples/github", 2),
        _finding("Password", "tests/samples/words", 1),
    ]
    (tmp_path / "tests" / "data" / "output.json").write_text(json.dumps(output))
    run = subprocess.run(
        [sys.executable, "benchmarks/bench_third_party_samples.py", "--credsweeper", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    report = json.loads(run.stdout)
    assert report["sample_files"] == 3 and report["labelled_findings"] == 2
    assert report["per_rule"] == {"Github Classic Token": "1/1", "Password": "0/1"}
    assert report["withheld"] == 1 and report["recall"] == 0.5
    assert report["flags_on_lines_not_labelled"] == 1  # the Slack token nobody labelled


def test_a_folder_that_is_not_a_checkout_is_refused(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "benchmarks/bench_third_party_samples.py", "--credsweeper", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert run.returncode != 0 and "not CredSweeper's samples" in run.stderr


def test_the_side_by_side_layout_is_read_and_a_value_left_on_its_line_is_missed(
    tmp_path: Path,
) -> None:
    (tmp_path / "samples").mkdir()
    token = TOKENS["github-classic"]()
    # The detector withholds the token, but the labelled value on the same line is another one
    # that survives as written: the finding counts as missed.
    (tmp_path / "samples" / "two").write_text(f"GITHUB = '{token}' other=plainvalue9\n")
    output = [
        {
            "rule": "Password",
            "line_data_list": [
                {"path": "./tests/samples/two", "line_num": 1, "value": "plainvalue9"}
            ],
        },
        {
            "rule": "Github Classic Token",
            "line_data_list": [{"path": "./tests/samples/two", "line_num": 1, "value": token}],
        },
    ]
    (tmp_path / "expected.json").write_text(json.dumps(output))
    run = subprocess.run(
        [sys.executable, "benchmarks/bench_third_party_samples.py", "--credsweeper", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    report = json.loads(run.stdout)
    assert report["per_rule"] == {"Github Classic Token": "1/1", "Password": "0/1"}
    assert report["detector_alone"]["recall"] == 0.5
    # Served from a workspace through the server's own read and search: the same verdicts.
    assert report["served"]["recall"] == 0.5
