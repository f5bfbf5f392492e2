"""`sp context scan` sums its findings per kind of secret (findings, withheld, files), in the
table and in `--json`, and names a certificate file refused for the private key it holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from safeport.context_server.operations.secret_report import (
    KindSummary,
    ScanFinding,
    ScannedFile,
    ScanReport,
    summarise_kinds,
)
from tests.context_server.operations.test_scan_and_allow import sp
from tests.context_server.operations.test_secrets_in_content import LATE_TOKEN as OTHER_TOKEN
from tests.context_server.operations.test_secrets_in_content import TOKEN
from tests.context_server.policy.material import material

FALSE_POSITIVE = "Zq8Wm3Kx7Lp2Rt5Vb9N"
REAL = "Tn4Hx9Wq2Kb7Lm3Rz8P"


def _found(kind: str, line: int, *, as_written: bool = False) -> ScanFinding:
    return ScanFinding(kind=kind, line=line, end_line=line, served_as_written=as_written)


def test_kinds_count_findings_withheld_and_files_most_found_first() -> None:
    files = [
        ScannedFile(
            root="ws",
            path="a.py",
            findings=[
                _found("secret-assignment", 1),
                _found("secret-assignment", 2, as_written=True),
                _found("github-token", 3),
            ],
        ),
        ScannedFile(root="ws", path="b.py", findings=[_found("secret-assignment", 9)]),
        ScannedFile(root="ws", path="c.md", findings=[_found("private-key", 1)]),
    ]
    assert summarise_kinds(files) == [
        KindSummary(kind="secret-assignment", findings=3, withheld=2, files=2),
        KindSummary(kind="github-token", findings=1, withheld=1, files=1),
        KindSummary(kind="private-key", findings=1, withheld=1, files=1),
    ]
    assert summarise_kinds([]) == []


@pytest.fixture
def scanned(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "ws"
    (root / "app").mkdir(parents=True)
    (root / "tls").mkdir()
    (root / "app" / "settings.py").write_text(
        f'GITHUB_TOKEN = "{TOKEN}"\nfixture_secret = "{FALSE_POSITIVE}"\ndb_password = "{REAL}"\n'
    )
    (root / "app" / "ci.py").write_text(f'TOKEN = "{OTHER_TOKEN}"\n')
    (root / "app" / "copy.py").write_text(f'api_secret = "{FALSE_POSITIVE}"\n')
    (root / "app" / "deploy.md").write_text("The key:\n\n" + material().pkcs8 + "\nDone.\n")
    (root / "tls" / "ca.crt").write_text(material().certificate)
    (root / "tls" / "combined.pem").write_text(material().certificate + material().pkcs8)
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    return root, home


def _json(home: Path, root: Path) -> ScanReport:
    shown = sp(home, "context", "scan", "--root", str(root), "--json")
    assert shown.returncode == 0, shown.stderr
    return ScanReport.model_validate_json(shown.stdout)


def test_the_scan_sums_each_kind_in_json_and_in_the_table(scanned: tuple[Path, Path]) -> None:
    root, home = scanned
    report = _json(home, root)
    by_kind = {k.kind: k for k in report.kinds}
    assert by_kind["private-key"] == KindSummary(
        kind="private-key", findings=1, withheld=1, files=1
    )
    tokens = by_kind["github-token"]
    assert (tokens.findings, tokens.withheld, tokens.files) == (2, 2, 2)
    # Whatever the detector names each finding, the sums are those of the files listed.
    assert report.kinds == summarise_kinds(report.files)
    assert sum(k.findings for k in report.kinds) == report.secrets_found
    assert sum(k.withheld for k in report.kinds) == report.secrets_withheld
    refused = {(r.path, r.reason) for r in report.refused}
    assert ("tls/combined.pem", "key-material") in refused
    assert not [r for r in report.refused if r.path == "tls/ca.crt"]

    table = sp(home, "context", "scan", "--root", str(root))
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    at = lines.index("by kind:")
    assert lines[at + 1].split() == ["kind", "findings", "withheld", "files"]
    rows = [line.split() for line in lines[at + 2 : at + 2 + len(report.kinds)]]
    assert rows == [[k.kind, str(k.findings), str(k.withheld), str(k.files)] for k in report.kinds]
    assert "tls/combined.pem: private by content" in table.stdout
    for secret in (TOKEN, OTHER_TOKEN, FALSE_POSITIVE, REAL):
        assert secret[4:16] not in table.stdout + table.stderr


def test_a_value_allowed_back_counts_as_found_and_not_withheld(
    scanned: tuple[Path, Path],
) -> None:
    root, home = scanned
    before = {k.kind: k for k in _json(home, root).kinds}
    [mark] = [
        f.fingerprint
        for file in _json(home, root).files
        if file.path == "app/copy.py"
        for f in file.findings
    ]
    assert mark is not None
    added = sp(home, "context", "allow", mark, "--root", str(root))
    assert added.returncode == 0, added.stderr
    after = {k.kind: k for k in _json(home, root).kinds}
    [kind] = {
        f.kind for file in _json(home, root).files for f in file.findings if f.fingerprint == mark
    }
    # The value is written twice (app/settings.py and app/copy.py): both are served as written.
    assert after[kind].findings == before[kind].findings
    assert after[kind].withheld == before[kind].withheld - 2
    assert after[kind].files == before[kind].files
