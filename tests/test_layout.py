"""Test folders mirror the packages of src/safeport, so a package's tests are found beside its
name. Two folders mirror no single package: the drills (the gateway killed, flooded and fed
fuzzed files, context servers under load) and the benchmarks' short profiles."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WHOLE_SYSTEM = {("drills",), ("benchmarks",)}


def unmirrored(tests: Path, src: Path) -> list[str]:
    """Test folders with no package of the same path under ``src``."""
    found = []
    for init in sorted(tests.rglob("__init__.py")):
        folder = init.parent.relative_to(tests).parts
        if (
            folder
            and folder not in WHOLE_SYSTEM
            and not (src.joinpath(*folder) / "__init__.py").is_file()
        ):
            found.append("/".join(folder))
    return found


def test_every_test_folder_mirrors_a_package() -> None:
    assert unmirrored(REPO / "tests", REPO / "src" / "safeport") == []


def test_a_folder_without_its_package_is_reported(tmp_path: Path) -> None:
    for folder in ("tests/vault", "tests/ladder", "src/vault"):
        (tmp_path / folder).mkdir(parents=True)
    for init in ("tests/vault", "tests/ladder", "src/vault"):
        (tmp_path / init / "__init__.py").write_text("")
    assert unmirrored(tmp_path / "tests", tmp_path / "src") == ["ladder"]
