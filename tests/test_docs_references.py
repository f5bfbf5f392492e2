"""The README, SECURITY.md, CHANGELOG.md and every page under docs/ cite only what exists.

A reader who follows a path from the documentation must find that file, and a reader who looks
up the test named beside a guarantee must find that test; a document outside the repository is
no evidence for anybody. So, in every document:

- every backticked path under a folder of the repository, or under a package of
  ``src/safeport``, must exist; so must every ``test_*.py`` or ``bench_*.py`` named on its own
  (somewhere under ``tests/`` or ``benchmarks/``);
- every test named in backticks must be defined: ``file.py::test_name`` in that file, and
  ``::test_name`` or a bare ``test_name`` somewhere under ``tests/``; a name cut short with
  ``…`` must begin some test's name;
- every relative link (``[text](path)``, images too) must lead to a file of the repository.

A document that is missing, or a docs folder with no page, fails too: the check must not pass by
reading nothing.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROOT_DOCUMENTS = ("README.md", "SECURITY.md", "CHANGELOG.md")
REPOSITORY_FOLDERS = ("src/safeport/", "tests/", "benchmarks/", "docs/", "scripts/", ".ci/")
PACKAGE_FOLDERS = ("shared/", "context_server/", "action_gateway/", "vault/", "cli/", "demo/")
_BACKTICKED = re.compile(r"`([^`\s]+)`")
_FILE_NAME = re.compile(r"[\w./{},-]+\.(?:py|md|toml|json|txt|sh)(?:::\w+…?)?")
# `file.py::test_name`, `::test_name` (the file named just before), or a bare `test_name`; a
# trailing `…` marks a name cut short in a table.
_TEST_NAME = re.compile(r"(?:(?P<file>[\w./{},-]+\.py)?::)?(?P<name>test_\w+)(?P<cut>…)?")
_TEST_DEF = re.compile(r"^\s*(?:async\s+)?def\s+(test_\w+)", re.MULTILINE)
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def documents() -> list[Path]:
    pages = sorted((ROOT / "docs").rglob("*.md"))
    assert pages, "docs/ holds no page"
    return [*(ROOT / name for name in ROOT_DOCUMENTS), *pages]


def _cited(text: str) -> list[str]:
    return [m for m in _BACKTICKED.findall(text) if _FILE_NAME.fullmatch(m)]


def _expand(path: str) -> list[str]:
    """``tests/vault/test_attacks_{file,leaks}.py`` names two files."""
    brace = re.search(r"\{([^}]*)\}", path)
    if brace is None:
        return [path]
    head, tail = path[: brace.start()], path[brace.end() :]
    return [f"{head}{choice}{tail}" for choice in brace.group(1).split(",")]


def _files(path: str) -> list[Path] | None:
    """The repository files a cited path names (empty: none), or None for a name this test
    cannot judge (an example in prose)."""
    if path.startswith(REPOSITORY_FOLDERS):
        return [ROOT / path] if (ROOT / path).exists() else []
    if path.startswith(PACKAGE_FOLDERS):
        package = ROOT / "src" / "safeport"
        direct = [package / path] if (package / path).exists() else []
        return direct or sorted(package.glob(f"*/{path}"))
    if "/" not in path and re.fullmatch(r"(test|bench)_\w+\.py", path):
        return sorted(ROOT.glob(f"tests/**/{path}")) + sorted(ROOT.glob(f"benchmarks/{path}"))
    return None


def _exists(citation: str) -> bool | None:
    """True or False for a citation this test can judge; None for an example name in prose."""
    found = _files(citation.split("::", 1)[0])
    return None if found is None else bool(found)


@functools.cache
def _tests_in(path: Path) -> frozenset[str]:
    return frozenset(_TEST_DEF.findall(path.read_text(encoding="utf-8")))


@functools.cache
def _every_test() -> frozenset[str]:
    return frozenset().union(*(_tests_in(path) for path in (ROOT / "tests").rglob("*.py")))


def _test_defined(citation: str) -> bool | None:
    """Whether a cited test is defined (where its citation says); None when it names no test."""
    match = _TEST_NAME.fullmatch(citation)
    if match is None:
        return None
    file, name, cut = match["file"], match["name"], match["cut"]
    if file is None:
        names = _every_test()
    else:
        found = [path for each in _expand(file) for path in (_files(each) or [])]
        names = frozenset().union(*(_tests_in(path) for path in found if path.suffix == ".py"))
    return any(defined.startswith(name) for defined in names) if cut else name in names


def _broken_links(document: Path, root: Path = ROOT) -> list[str]:
    text = _FENCE.sub("", document.read_text(encoding="utf-8"))
    broken = []
    for target in _LINK.findall(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a web address or an anchor in the same page
        path = target.split("#", 1)[0]
        resolved = (document.parent / path).resolve()
        if not resolved.is_relative_to(root) or not resolved.exists():
            broken.append(target)
    return broken


def test_every_document_is_read() -> None:
    names = {path.relative_to(ROOT).as_posix() for path in documents()}
    assert {*ROOT_DOCUMENTS, "docs/index.md", "docs/architecture.md"} <= names
    assert any(name.startswith("docs/security/") for name in names)


def test_every_cited_file_exists() -> None:
    missing = [
        f"{document.relative_to(ROOT)}: {expanded}"
        for document in documents()
        for citation in _cited(document.read_text(encoding="utf-8"))
        for expanded in _expand(citation)
        if _exists(expanded) is False
    ]
    assert missing == []


def test_every_cited_test_is_defined() -> None:
    missing = [
        f"{document.relative_to(ROOT)}: {citation}"
        for document in documents()
        for citation in _BACKTICKED.findall(document.read_text(encoding="utf-8"))
        if _test_defined(citation) is False
    ]
    assert missing == []


def test_every_relative_link_leads_to_a_file_of_the_repository() -> None:
    broken = [
        f"{document.relative_to(ROOT)}: {target}"
        for document in documents()
        for target in _broken_links(document)
    ]
    assert broken == []


def test_no_document_outside_the_repository_is_cited() -> None:
    folders = ("src", "tests", "harness", "benchmarks", "scripts")
    code = [path for folder in folders for path in (ROOT / folder).rglob("*.py")]
    sources = [*documents(), *code]
    citing = [
        str(path.relative_to(ROOT))
        for path in sources
        if path != Path(__file__) and "DESIGN.md" in path.read_text(encoding="utf-8")
    ]
    assert citing == []


def test_the_checker_judges_both_ways(tmp_path: Path) -> None:
    assert _exists("tests/test_import_edges.py") is True
    assert _exists("shared/paths.py") is True
    assert _exists("test_import_edges.py") is True
    assert _exists("tests/no_such_test.py") is False
    assert _exists("context_server/no_such_module.py") is False
    assert _exists("test_no_such_thing.py") is False
    assert _exists("résumé.py") is None
    assert _exists("src/config.py") is None  # a workspace in an example, not this repository
    assert _expand("tests/test_{a,b}.py") == ["tests/test_a.py", "tests/test_b.py"]

    this = "test_the_checker_judges_both_ways"
    assert _test_defined(f"tests/test_docs_references.py::{this}") is True
    assert _test_defined(f"test_docs_references.py::{this}") is True
    assert _test_defined(f"::{this}") is True
    assert _test_defined(this) is True
    assert _test_defined("test_the_checker_judges_…") is True
    assert _test_defined(f"tests/test_import_edges.py::{this}") is False  # defined elsewhere
    assert _test_defined("tests/no_such_test.py::test_anything") is False
    assert _test_defined("test_no_test_is_named_like_this") is False
    assert _test_defined("test_no_test_begins_like_this_…") is False
    assert _test_defined("test_policy.py") is None  # a file, judged by _exists
    assert _test_defined("pytest") is None

    page = tmp_path / "page.md"
    page.write_text(
        "[here](page.md) [gone](missing.md) ![gone](pictures/missing.svg) [web](https://x.org)\n"
        "[anchor](#top)\n```\n[in code](not-a-link.md)\n```\n"
    )
    assert _broken_links(page, root=tmp_path) == ["missing.md", "pictures/missing.svg"]
    (tmp_path / "inside").mkdir()
    outside = tmp_path / "inside" / "page.md"
    outside.write_text("[up](../page.md)\n")
    assert _broken_links(outside, root=tmp_path / "inside") == ["../page.md"]
