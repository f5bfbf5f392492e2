"""`sp` sends a secret only to an `sp gateway run` of this installation (pure judgement)."""

from __future__ import annotations

from pathlib import Path

import pytest

from safeport.cli.gateway_client import Installation, judge_gateway_process
from safeport.shared.gateway_socket import ImpostorGateway

INSTALL = Installation(python="/home/u/.venv/bin/python", sp_script=None)


def test_isolated_python_m_safeport_gateway_run_of_the_same_interpreter_is_accepted() -> None:
    judge_gateway_process(
        ["/home/u/.venv/bin/python", "-I", "-m", "safeport", "gateway", "run"],
        {"HOME": "/h"},
        0,
        INSTALL,
    )


def test_python_m_safeport_without_isolation_is_an_impostor() -> None:
    # It imports from its working folder: any folder with a safeport/ package could be it.
    with pytest.raises(ImpostorGateway):
        judge_gateway_process(
            ["/home/u/.venv/bin/python", "-m", "safeport", "gateway", "run"], {}, 0, INSTALL
        )


def test_the_sp_script_of_this_installation_is_accepted(tmp_path: Path) -> None:
    script = tmp_path / "sp"
    script.write_text("#!python\n")
    install = Installation(python="/home/u/.venv/bin/python", sp_script=str(script))
    judge_gateway_process(
        ["/home/u/.venv/bin/python", str(script), "gateway", "run"], None, 0, install
    )
    judge_gateway_process(
        ["/home/u/.venv/bin/python", "-I", str(script), "gateway", "run"], None, 0, install
    )


def test_another_name_of_the_same_interpreter_in_the_same_environment_is_accepted(
    tmp_path: Path,
) -> None:
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    real = tmp_path / "python3.11"
    real.write_text("")
    (bin_dir / "python").symlink_to(real)
    (bin_dir / "python3").symlink_to(real)
    other = tmp_path / "other" / "bin"
    other.mkdir(parents=True)
    (other / "python3").symlink_to(real)
    install = Installation(python=str(bin_dir / "python"), sp_script=None)
    judge_gateway_process(
        [str(bin_dir / "python3"), "-I", "-m", "safeport", "gateway", "run"], {}, 0, install
    )
    with pytest.raises(ImpostorGateway):  # another venv linking the same base interpreter
        judge_gateway_process(
            [str(other / "python3"), "-I", "-m", "safeport", "gateway", "run"], {}, 0, install
        )


@pytest.mark.parametrize(
    "argv",
    [
        ["/usr/bin/python3", "-m", "safeport", "gateway", "run"],  # another interpreter/venv
        ["python", "-m", "safeport", "gateway", "run"],  # relative: cannot be checked
        ["/home/u/.venv/bin/python", "-I", "-m", "safeport", "gateway", "status"],
        ["/home/u/.venv/bin/python", "-I", "-m", "safeport"],
        ["/home/u/.venv/bin/python", "-I", "-I", "-m", "safeport", "gateway", "run"],
        ["/home/u/.venv/bin/python", "-c", "-I", "-m", "safeport", "gateway", "run"],
        ["/home/u/.venv/bin/python", "fake_gateway.py", "gateway", "run"],
        ["/home/u/.venv/bin/python", "-m", "harness.gateway_process"],
        ["nc", "-lU", "control.sock"],
    ],
)
def test_anything_else_is_an_impostor(argv: list[str]) -> None:
    with pytest.raises(ImpostorGateway, match="not `sp gateway run`"):
        judge_gateway_process(argv, {}, 0, INSTALL)


@pytest.mark.parametrize("name", ["LD_PRELOAD", "PYTHONPATH", "PYTHONSTARTUP", "LD_AUDIT"])
def test_a_gateway_with_injection_variables_gets_no_secret(name: str) -> None:
    with pytest.raises(ImpostorGateway, match=name):
        judge_gateway_process(
            ["/home/u/.venv/bin/python", "-I", "-m", "safeport", "gateway", "run"],
            {name: "x"},
            0,
            INSTALL,
        )


def test_a_traced_gateway_gets_no_secret() -> None:
    with pytest.raises(ImpostorGateway, match="traced"):
        judge_gateway_process(
            ["/home/u/.venv/bin/python", "-I", "-m", "safeport", "gateway", "run"],
            {},
            4242,
            INSTALL,
        )
