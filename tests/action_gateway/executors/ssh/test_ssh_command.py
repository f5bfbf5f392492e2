"""The rendered SSH command: declared argv, validated values, one literal word each."""

from __future__ import annotations

import shlex

import pytest

from safeport.action_gateway.executors.interface import ActionError
from safeport.action_gateway.executors.ssh.command import render_argv, render_command
from safeport.shared.schemas.config import SshCommand


def _command(**params: dict[str, object]) -> SshCommand:
    argv = ["systemctl", "status", "--no-pager", *[f"{{{name}}}" for name in params]]
    return SshCommand.model_validate({"argv": argv, "params": params})


STRICT = _command(service={"pattern": "^[a-z0-9-]{1,48}$"})
LOOSE = _command(text={"pattern": "^.{1,200}$"})


def test_declared_argv_with_a_valid_value_is_rendered_as_shlex_join() -> None:
    assert render_command(STRICT, {"service": "worker"}) == "systemctl status --no-pager worker"


def test_a_value_inside_a_declared_word_keeps_the_word_whole() -> None:
    command = SshCommand.model_validate(
        {"argv": ["journalctl", "--unit={unit}.service"], "params": {"unit": {"enum": ["a b"]}}}
    )
    assert render_argv(command, {"unit": "a b"}) == ["journalctl", "--unit=a b.service"]
    assert shlex.split(render_command(command, {"unit": "a b"})) == render_argv(
        command, {"unit": "a b"}
    )


@pytest.mark.parametrize(
    "value",
    [
        "x; touch /tmp/owned",
        "$(touch /tmp/owned)",
        "`id`",
        "a && b | c > d",
        "'quoted'\"double\"",
        "-o ProxyCommand=touch /tmp/owned",
        "x -oProxyCommand=sh",
    ],
)
def test_shell_syntax_in_a_permitted_value_reaches_the_program_as_one_literal_word(
    value: str,
) -> None:
    rendered = render_command(LOOSE, {"text": "a" + value})
    assert shlex.split(rendered)[-1] == "a" + value


@pytest.mark.parametrize(
    "value",
    ["worker; rm -rf /", "worker\n", "worker\nid", "$(id)", "a" * 49, "-oProxyCommand=x", ""],
)
def test_a_value_outside_its_pattern_is_refused(value: str) -> None:
    with pytest.raises(ActionError) as caught:
        render_command(STRICT, {"service": value})
    assert caught.value.failure == "invalid_target"
    # The reason names the param and the rule, never the hostile value.
    assert caught.value.message.startswith("argument `service`")


def test_a_newline_is_refused_even_by_a_pattern_that_would_allow_it() -> None:
    command = _command(text={"pattern": "(?s)^.{1,200}$"})
    with pytest.raises(ActionError, match="control character"):
        render_command(command, {"text": "ok\ntouch /tmp/owned"})


def test_a_leading_dash_is_refused_unless_the_command_allows_it() -> None:
    with pytest.raises(ActionError, match="may not start with '-'"):
        render_command(LOOSE, {"text": "-oProxyCommand=touch /tmp/owned"})
    allowed = SshCommand.model_validate(
        {
            "argv": ["ls", "{flags}"],
            "params": {"flags": {"enum": ["-l", "-la"]}},
            "allow_leading_dash": ["flags"],
        }
    )
    assert render_command(allowed, {"flags": "-la"}) == "ls -la"


def test_a_too_long_value_is_refused() -> None:
    with pytest.raises(ActionError, match="longer than"):
        render_command(LOOSE, {"text": "a" * 257})


def test_missing_and_undeclared_arguments_are_refused() -> None:
    with pytest.raises(ActionError, match="missing argument"):
        render_command(STRICT, {})
    with pytest.raises(ActionError, match="undeclared argument"):
        render_command(STRICT, {"service": "worker", "extra": "-oProxyCommand=x"})


def test_an_integer_param_is_rendered_as_its_decimal_form() -> None:
    command = SshCommand.model_validate(
        {"argv": ["tail", "-n", "{lines}"], "params": {"lines": {"type": "int", "min": 1}}}
    )
    assert render_command(command, {"lines": 20}) == "tail -n 20"
    with pytest.raises(ActionError):
        render_command(command, {"lines": "20; id"})
