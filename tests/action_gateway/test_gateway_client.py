"""`sp` sends a secret only to an `sp gateway run` of this installation (pure judgement)."""

from __future__ import annotations

import pytest

from safeport.cli.gateway_client import ImpostorGateway, Installation, judge_gateway_process

INSTALL = Installation(python="/home/u/.venv/bin/python", sp_script=None)


def test_python_m_safeport_gateway_run_of_the_same_interpreter_is_accepted() -> None:
    judge_gateway_process(
        ["/home/u/.venv/bin/python", "-m", "safeport", "gateway", "run"], {"HOME": "/h"}, 0, INSTALL
    )


def test_the_sp_script_of_this_installation_is_accepted(tmp_path) -> None:  # type: ignore[no-untyped-def]
    script = tmp_path / "sp"
    script.write_text("#!python\n")
    install = Installation(python="/home/u/.venv/bin/python", sp_script=str(script))
    judge_gateway_process(
        ["/home/u/.venv/bin/python", str(script), "gateway", "run"], None, 0, install
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["/usr/bin/python3", "-m", "safeport", "gateway", "run"],  # another interpreter/venv
        ["python", "-m", "safeport", "gateway", "run"],  # relative: cannot be checked
        ["/home/u/.venv/bin/python", "-m", "safeport", "gateway", "status"],
        ["/home/u/.venv/bin/python", "fake_gateway.py", "gateway", "run"],
        ["/home/u/.venv/bin/python", "-m", "tests.action_gateway.gateway_harness"],
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
            ["/home/u/.venv/bin/python", "-m", "safeport", "gateway", "run"],
            {name: "x"},
            0,
            INSTALL,
        )


def test_a_traced_gateway_gets_no_secret() -> None:
    with pytest.raises(ImpostorGateway, match="traced"):
        judge_gateway_process(
            ["/home/u/.venv/bin/python", "-m", "safeport", "gateway", "run"], {}, 4242, INSTALL
        )
