"""Server-side advice that confines the gateway's key on each SSH host."""

from __future__ import annotations

import shlex

from safeport.action_gateway.policy.authorized_keys import advise
from safeport.shared.schemas.config import SshHost


def _host(commands: dict[str, object]) -> SshHost:
    return SshHost.model_validate(
        {
            "address": "203.0.113.7",
            "user": "deploy",
            "host_keys": ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample"],
            "credential": "build-key",
            "commands": commands,
        }
    )


def test_a_single_fixed_command_is_forced_with_restrict_and_from() -> None:
    advice = advise("web", _host({"uptime": {"argv": ["uptime", "-p"]}}))
    assert advice.options.startswith('restrict,from="')
    assert advice.forced_command == "uptime -p"
    assert 'command="uptime -p"' in advice.options
    assert advice.line("ssh-ed25519 AAAAkey gateway").endswith("ssh-ed25519 AAAAkey gateway")


def test_a_forced_command_with_quotes_is_escaped_for_authorized_keys() -> None:
    advice = advise("web", _host({"say": {"argv": ["echo", 'say "hi"']}}))
    assert advice.forced_command == shlex.join(["echo", 'say "hi"'])
    assert 'command="echo \'say \\"hi\\"\'"' in advice.options


def test_several_commands_get_one_key_per_command_advice_and_no_forced_command() -> None:
    advice = advise("web", _host({"a": {"argv": ["uptime"]}, "b": {"argv": ["df", "-h"]}}))
    assert advice.forced_command is None
    assert "command=" not in advice.options
    assert "restrict" in advice.options
    assert any("one key per command" in note for note in advice.notes)


def test_a_single_parameterised_command_cannot_be_forced() -> None:
    host = _host(
        {"status": {"argv": ["systemctl", "status", "{s}"], "params": {"s": {"enum": ["a"]}}}}
    )
    advice = advise("web", host)
    assert advice.forced_command is None
    assert any("takes parameters" in note for note in advice.notes)


def test_a_policy_gets_advice_for_every_host_in_name_order() -> None:
    from safeport.action_gateway.policy.authorized_keys import advise_policy
    from safeport.shared.schemas.config import parse_gateway_policy

    policy, _ = parse_gateway_policy(
        """
[credentials.k]
kind = "ssh-key"
[ssh.hosts.zeta]
address = "203.0.113.8"
user = "deploy"
host_keys = ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample"]
credential = "k"
[ssh.hosts.zeta.commands.uptime]
argv = ["uptime"]
[ssh.hosts.alpha]
address = "203.0.113.7"
user = "deploy"
host_keys = ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample"]
credential = "k"
"""
    )
    advice = advise_policy(policy)
    assert [a.host_id for a in advice] == ["alpha", "zeta"]
    assert advice[1].forced_command == "uptime"
    assert any("no command" in note for note in advice[0].notes)
