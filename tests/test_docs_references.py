"""The README, SECURITY.md and docs/ cite only files that are in the repository.

A reader who follows a path from the documentation must find that file; a document outside the
repository is no evidence for anybody. Every backticked path under a folder of the repository, or
under a package of ``src/safeport``, must exist; so must every ``test_*.py`` or ``bench_*.py``
named on its own (somewhere under ``tests/`` or ``benchmarks/``).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", ROOT / "SECURITY.md", *sorted((ROOT / "docs").glob("*.md"))]
REPOSITORY_FOLDERS = ("src/safeport/", "tests/", "benchmarks/", "docs/", "scripts/", ".ci/")
PACKAGE_FOLDERS = ("shared/", "context_server/", "action_gateway/", "vault/", "cli/", "demo/")
_BACKTICKED = re.compile(r"`([^`\s]+)`")
_FILE_NAME = re.compile(r"[\w./{},-]+\.(?:py|md|toml|json|txt|sh)(?:::\w+)?")


def _cited(text: str) -> list[str]:
    return [m for m in _BACKTICKED.findall(text) if _FILE_NAME.fullmatch(m)]


def _expand(path: str) -> list[str]:
    """``tests/vault/test_attacks_{file,leaks}.py`` names two files."""
    brace = re.search(r"\{([^}]*)\}", path)
    if brace is None:
        return [path]
    head, tail = path[: brace.start()], path[brace.end() :]
    return [f"{head}{choice}{tail}" for choice in brace.group(1).split(",")]


def _exists(citation: str) -> bool | None:
    """True or False for a citation this test can judge; None for an example name in prose."""
    path = citation.split("::", 1)[0]
    if path.startswith(REPOSITORY_FOLDERS):
        return (ROOT / path).exists()
    if path.startswith(PACKAGE_FOLDERS):
        package = ROOT / "src" / "safeport"
        return (package / path).exists() or any(package.glob(f"*/{path}"))
    if "/" not in path and re.fullmatch(r"(test|bench)_\w+\.py", path):
        return any(ROOT.glob(f"tests/**/{path}")) or any(ROOT.glob(f"benchmarks/{path}"))
    return None


def test_every_cited_file_exists() -> None:
    missing = [
        f"{document.relative_to(ROOT)}: {expanded}"
        for document in DOCUMENTS
        for citation in _cited(document.read_text(encoding="utf-8"))
        for expanded in _expand(citation)
        if _exists(expanded) is False
    ]
    assert missing == []


def test_no_document_outside_the_repository_is_cited() -> None:
    folders = ("src", "tests", "harness", "benchmarks", "scripts")
    sources = [*DOCUMENTS, *(path for folder in folders for path in (ROOT / folder).rglob("*.py"))]
    citing = [
        str(path.relative_to(ROOT))
        for path in sources
        if path != Path(__file__) and "DESIGN.md" in path.read_text(encoding="utf-8")
    ]
    assert citing == []


def test_the_checker_judges_both_ways() -> None:
    assert _exists("tests/test_import_edges.py") is True
    assert _exists("shared/paths.py") is True
    assert _exists("test_import_edges.py") is True
    assert _exists("tests/no_such_test.py") is False
    assert _exists("context_server/no_such_module.py") is False
    assert _exists("test_no_such_thing.py") is False
    assert _exists("résumé.py") is None
    assert _exists("src/config.py") is None  # a workspace in an example, not this repository
    assert _expand("tests/test_{a,b}.py") == ["tests/test_a.py", "tests/test_b.py"]
