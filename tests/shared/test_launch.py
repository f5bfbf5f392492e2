"""The one launch form, the older forms it flags, and the start-up provenance check (pure parts)."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from safeport.errors import EnvironmentProblem
from safeport.shared.launch import imports_from_working_folder, module_command, sp_command
from safeport.shared.provenance import _finder_mapping, verify_installed_package


def test_safeport_is_started_by_this_interpreter_in_isolated_mode() -> None:
    assert sp_command(["context", "serve"]) == [
        sys.executable,
        "-I",
        "-m",
        "safeport",
        "context",
        "serve",
    ]
    assert module_command("safeport.demo.agent", ["--x"])[1:4] == [
        "-I",
        "-m",
        "safeport.demo.agent",
    ]
    assert not imports_from_working_folder(sp_command(["context", "serve"]))


def test_only_safeport_modules_are_started() -> None:
    with pytest.raises(ValueError):
        module_command("safeportx", [])


@pytest.mark.parametrize(
    "argv",
    [
        ["/v/bin/python", "-m", "safeport", "context", "serve"],
        ["/v/bin/python3.11", "-B", "-m", "safeport"],
        ["python3", "-msafeport"],
        ["/v/bin/python", "-E", "-m", "safeport"],  # -E alone keeps the working folder
        ["/v/bin/python", "-P", "-m", "safeport"],  # -P alone keeps PYTHONPATH
        ["/v/bin/python", "-X", "dev", "-m", "safeport"],
        ["/v/bin/python", "-Wignore", "-m", "safeport"],
        ["/v/bin/python", "-W", "I", "-m", "safeport"],  # a value is not a flag
        ["/v/bin/python", "-c", "import safeport"],
        ["/v/bin/python", "-Bm", "safeport"],
        ["/v/bin/python", "--check-hash-based-pycs", "always", "-m", "safeport"],
        ["/v/bin/python", "-I", "safeport"],  # a relative script: ./safeport/__main__.py
        ["/v/bin/python", "-I", "--", "safeport"],
        ["/v/bin/python", "-"],
        [".venv/bin/python", "-I", "-m", "safeport"],  # a relative program
        ["python3", "-I", "-m", "safeport"],  # looked up through PATH, maybe `.`
        ["/usr/bin/env", "python3", "-I", "-m", "safeport"],
        ["/usr/bin/env", "X=1", "/v/bin/python", "-m", "safeport"],
        ["/usr/bin/env", "-u", "PATH", "/v/bin/python", "-I", "-m", "safeport"],
        ["/v/bin/python3.13t", "-m", "safeport"],
        ["/v/bin/python3-dbg", "-m", "safeport"],
        ["/v/bin/pypy3", "-m", "safeport"],
        ["node", "-m", "x"],
    ],
)
def test_python_forms_that_import_from_the_working_folder_are_flagged(argv: list[str]) -> None:
    assert imports_from_working_folder(argv)


@pytest.mark.parametrize(
    "argv",
    [
        ["/v/bin/python", "-I", "-m", "safeport"],
        ["/v/bin/python", "-Im", "safeport"],
        ["/v/bin/python", "-BI", "-m", "safeport"],
        ["/v/bin/python", "-P", "-E", "-m", "safeport"],
        ["/v/bin/python", "/v/bin/sp", "context", "serve"],  # the script's folder, not the cwd
        ["/v/bin/sp", "context", "serve"],
        ["/usr/bin/env", "/v/bin/python", "-I", "-m", "safeport"],
        ["/v/bin/python", "--check-hash-based-pycs", "always", "-I", "-m", "safeport"],
        ["/usr/bin/node", "/srv/server.js"],  # not Python, absolute
    ],
)
def test_isolated_or_non_python_forms_are_not_flagged(argv: list[str]) -> None:
    assert not imports_from_working_folder(argv)


def test_this_process_imported_the_installed_safeport() -> None:
    verify_installed_package()


def test_a_module_loaded_from_elsewhere_under_the_package_name_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stray = types.ModuleType("safeport._planted")
    stray.__file__ = str(tmp_path / "planted.py")
    monkeypatch.setitem(sys.modules, "safeport._planted", stray)
    with pytest.raises(EnvironmentProblem, match=r"planted\.py"):
        verify_installed_package()


def test_a_package_without_a_distribution_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = types.ModuleType("notinstalledpkg")
    fake.__file__ = str(tmp_path / "notinstalledpkg" / "__init__.py")
    monkeypatch.setitem(sys.modules, "notinstalledpkg", fake)
    with pytest.raises(EnvironmentProblem, match="no installed distribution"):
        verify_installed_package("notinstalledpkg")


def test_the_editable_finder_mapping_is_read_as_a_literal_never_run() -> None:
    source = (
        "import sys\nMAPPING: dict[str, str] = {'safeport': '/src/safeport'}\n"
        "NAMESPACES = {}\nraise SystemExit('never executed')\n"
    )
    assert _finder_mapping(source) == {"safeport": "/src/safeport"}
    assert _finder_mapping("MAPPING = {'a': f()}") == {}
    assert _finder_mapping("not python (") == {}
