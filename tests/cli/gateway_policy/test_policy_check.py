"""`sp policy check` and `accept` catch what would only fail when the agent asks: a credential
the vault lacks or holds with another kind, a placeholder or damaged pinned key; they report
changes that wait for acceptance, and the agent is told when its action waits for one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.gateway import HOST_KEY, AgentProcess
from safeport.action_gateway.policy.review import host_key_problem, review
from safeport.shared.schemas.config import parse_gateway_policy
from tests.cli.running_gateway import running_gateway
from tests.cli.test_real_vault_e2e import POLICY, home, sp

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.cli.gateway_policy.policy"

__all__ = ["home"]

MISSING_CREDENTIAL = POLICY + '\n[credentials.deploy-token]\nkind = "token"\n'


def test_a_real_pinned_key_passes_and_placeholders_or_damage_do_not() -> None:
    assert host_key_problem(HOST_KEY) is None
    assert "not valid base64" in str(host_key_problem("ssh-ed25519 AAAA..."))
    kind, data = HOST_KEY.split()
    assert "damaged" in str(host_key_problem(f"{kind} {data[:-8]}"))  # cut short
    assert "another type" in str(host_key_problem(f"ssh-rsa {data}"))


def test_review_names_the_line_of_each_problem() -> None:
    text = POLICY.replace(HOST_KEY, "ssh-ed25519 AAAA...") + (
        '\n[credentials.api]\nkind = "basic"\n'
    )
    policy, _ = parse_gateway_policy(text)
    problems = review(policy, text, {"build-key": "ssh-key", "api": "token"})
    lines = text.splitlines()
    assert len(problems) == 2
    key, credential = sorted(problems, key=lambda p: p.message)[::-1]
    assert key.line is not None and credential.line is not None
    assert "AAAA..." in lines[key.line - 1]
    assert "credential 'api' is declared basic but the vault holds a token" in credential.message
    assert lines[credential.line - 1] == "[credentials.api]"
    assert review(policy, text, None) == [key]  # the vault not asked: keys only


def test_check_without_a_gateway_still_refuses_a_placeholder_key(home: Path) -> None:
    text = POLICY.replace(HOST_KEY, "ssh-ed25519 AAAA...")
    (home / "gateway.toml").write_text(text)
    done = sp(home, "policy", "check")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "pinned key 1 is not valid base64" in done.stdout
    line = next(n for n, ln in enumerate(text.splitlines(), 1) if "AAAA..." in ln)
    assert f"line {line}:" in done.stdout and "fix: run `sp ssh scan 127.0.0.1:1`" in done.stdout
    assert "credentials were not checked" in done.stdout


def test_check_and_accept_against_the_unlocked_gateway_find_a_missing_credential(
    home: Path,
) -> None:
    with running_gateway(home):
        pw = str(home / "pw")
        assert sp(home, "policy", "check").returncode == 0
        assert sp(home, "policy", "accept", "--passphrase-file", pw, "--yes").returncode == 0
        (home / "gateway.toml").write_text(MISSING_CREDENTIAL)
        done = sp(home, "policy", "check")
        assert done.returncode == 1
        assert "credential 'deploy-token' is not in the vault" in done.stdout
        assert "fix: sp vault add deploy-token --kind token" in done.stdout
        assert "NOT served: 3 changed line(s) wait for `sp policy accept`" in done.stdout
        as_json = json.loads(sp(home, "policy", "check", "--json").stdout)
        assert as_json["vault_checked"] and as_json["unaccepted_changes"] == 3
        assert as_json["problems"][0]["fix"] == "sp vault add deploy-token --kind token"
        refused = sp(home, "policy", "accept", "--passphrase-file", pw, "--yes")
        assert refused.returncode == 1 and "not accepted" in refused.stderr
        assert "deploy-token" in refused.stdout


def test_an_action_only_in_an_unaccepted_edit_tells_the_agent_it_waits(home: Path) -> None:
    with running_gateway(home):
        pw = str(home / "pw")
        assert sp(home, "policy", "accept", "--passphrase-file", pw, "--yes").returncode == 0
        (home / "gateway.toml").write_text(
            POLICY + '\n[ssh.hosts.nowhere.commands.df]\nargv = ["df", "-h"]\n'
        )
        agent = AgentProcess(home, ["flock", str(home / "client.lock")])
        try:
            for command, waits in (("df", True), ("never-declared", False)):
                proposal = {"v": 1, "id": command, "type": "propose", "action": "ssh_exec",
                            "host_id": "nowhere", "command_id": command, "args": {}}  # fmt: skip
                reply = agent.call(proposal)
                assert reply["ok"] is False and reply["error"]["code"] == "denied", reply
                reason = reply["error"]["reason"]
                assert ("waits for a human to run `sp policy accept`" in reason) is waits, reason
        finally:
            agent.exit()


@pytest.mark.parametrize("placeholder", ["ssh-ed25519 AAAA...", "ssh-ed25519 AAAAC3Nza"])
def test_placeholders_from_examples_are_caught(placeholder: str) -> None:
    assert host_key_problem(placeholder) is not None


def test_gateway_status_and_sp_status_flag_a_policy_the_vault_cannot_serve(home: Path) -> None:
    with running_gateway(home):
        (home / "gateway.toml").write_text(MISSING_CREDENTIAL)
        shown = sp(home, "gateway", "status")
        assert shown.returncode == 0, shown.stderr
        assert "gateway.toml has 1 problem(s); see `sp policy check`" in shown.stdout
        assert "credential 'deploy-token' is not in the vault" in shown.stdout
        overview = sp(home, "status")
        assert "PROBLEM" in overview.stdout and "deploy-token" in overview.stdout
        answer = json.loads(sp(home, "status", "--json").stdout)
        assert any("deploy-token" in p for p in answer["policy"]["problems"])
