"""`remove_entry` takes out exactly one entry's tables and leaves every other line as it was;
what it cannot cut cleanly (an entry written inside its parent, a header inside a string) it
refuses whole, never half-removed."""

from __future__ import annotations

import tomllib

import pytest

from safeport.authoring.removal import remove_entry
from safeport.authoring.starter import EXAMPLE_HOST_KEY, STARTER_POLICY, uncommented
from safeport.errors import ConfigError
from safeport.shared.schemas.config import parse_gateway_policy

LIVE = uncommented(STARTER_POLICY)


def _removed_lines(before: str, after: str) -> list[str]:
    """The lines of ``before`` missing from ``after``; ``after`` keeps the rest in order."""
    kept = iter(after.splitlines())
    removed = []
    pending = next(kept, None)
    for line in before.splitlines():
        if line == pending:
            pending = next(kept, None)
        else:
            removed.append(line)
    assert pending is None, f"a line was added or changed: {pending!r}"
    return removed


def test_an_operation_goes_with_its_lines_and_nothing_else() -> None:
    done = remove_entry(LIVE, "operation", "deploy-api/create_issue")
    removed = _removed_lines(LIVE, done.text)
    assert removed[0] == "[http.services.deploy-api.operations.create_issue]"
    assert removed[-1] == ""  # the one blank line that closed it, so no gap of two is left
    assert all(not line.startswith("#") for line in removed)
    policy, _ = parse_gateway_policy(done.text)
    assert set(policy.http.services["deploy-api"].operations) == {"deployment_status"}
    assert "# --- Example: one SSH host" in done.text  # what introduces the next table stays
    assert done.unused_credential is None


def test_a_host_goes_with_its_commands_and_names_the_credential_left_unused() -> None:
    done = remove_entry(LIVE, "ssh", "staging")
    policy, _ = parse_gateway_policy(done.text)
    assert policy.ssh.hosts == {} and "staging-key" in policy.credentials
    assert done.unused_credential == "staging-key"
    assert "[ssh.hosts.staging.commands.restart_service]" not in done.text
    again = remove_entry(done.text, "credential", "staging-key")
    assert "staging-key" not in parse_gateway_policy(again.text)[0].credentials
    assert again.text.endswith('params.title = { pattern = "^.{1,200}$" }\n\n'
                               "# --- Example: one SSH host ----------------------------------"
                               "-------------------------------\n"
                               "# Uncomment the block, put in your host, and REPLACE the example "
                               "key with the host's own:\n"
                               "# `sp ssh scan 203.0.113.7`, its fingerprint checked on the "
                               "server. Store the key the gateway\n"
                               "# signs in with: `sp vault add staging-key --kind ssh-key "
                               "--value-file KEY`.\n")  # fmt: skip


@pytest.mark.parametrize(
    ("credential", "user"),
    [("deploy-token", 'https service "deploy-api"'), ("staging-key", 'ssh host "staging"')],
)
def test_a_credential_in_use_is_refused_naming_what_uses_it(credential: str, user: str) -> None:
    with pytest.raises(ConfigError) as refused:
        remove_entry(LIVE, "credential", credential)
    assert user in refused.value.diagnostic() and "remove that first" in refused.value.diagnostic()


@pytest.mark.parametrize(
    ("kind", "name", "said"),
    [
        ("ssh", "nope", 'no ssh host "nope"; declared here: "staging"'),
        ("command", "staging/nope", 'no command "nope" of ssh host "staging"'),
        ("command", "nope/uptime", 'no command "uptime" of ssh host "nope"'),
        ("command", "staging", "as HOST/COMMAND"),
        ("operation", "/create_issue", "as SERVICE/OPERATION"),
        ("sql", "db", 'no database "db"; declared here: none'),
        ("ssh", "staging\x1b[2J", 'no ssh host "staging\\u001b[2J"'),
    ],
)
def test_an_entry_that_is_not_declared_is_refused(kind: str, name: str, said: str) -> None:
    with pytest.raises(ConfigError) as refused:
        remove_entry(LIVE, kind, name)  # type: ignore[arg-type]
    assert said in refused.value.diagnostic()


HOSTS = """\
[credentials.k]
kind = "ssh-key"

[ssh.hosts.staging]   # the one to remove
address = "203.0.113.7"
user = "deploy"
host_keys = ["{key}"]
credential = "k"

# staging-2 is the twin in the other rack
[ssh.hosts.staging-2]
address = "203.0.113.8"
user = "deploy"
host_keys = ["{key}"]
credential = "k"

[ssh.hosts.staging-2.commands.uptime]
argv = ["uptime"]

[ ssh . hosts . "staging" . commands . uptime ]   # out of order, spaced and quoted
argv = ["uptime"]
"""


def _hosts() -> str:
    return HOSTS.replace("{key}", EXAMPLE_HOST_KEY)


def test_a_name_is_matched_whole_and_as_toml_reads_its_headers() -> None:
    text = _hosts()
    done = remove_entry(text, "ssh", "staging")
    hosts = tomllib.loads(done.text)["ssh"]["hosts"]
    assert set(hosts) == {"staging-2"} and set(hosts["staging-2"]["commands"]) == {"uptime"}
    assert "# staging-2 is the twin in the other rack" in done.text
    assert "out of order" not in done.text and "the one to remove" not in done.text


@pytest.mark.parametrize(
    ("text", "kind", "name"),
    [
        # The command written as a dotted key inside its host's table.
        (
            '[ssh.hosts.staging]\naddress = "a"\ncommands.uptime = { argv = ["uptime"] }\n',
            "command",
            "staging/uptime",
        ),
        # The host written inside its parent table.
        ('[ssh.hosts]\nstaging.address = "a"\n', "ssh", "staging"),
        # What looks like its header is a line of a string in another table.
        (
            '[credentials.k]\nkind = "ssh-key"\n[http.services.x]\ndescription = """\n'
            '[credentials.k]\n"""\n',
            "credential",
            "k",
        ),
    ],
)
def test_an_entry_that_cannot_be_cut_line_by_line_is_refused_whole(
    text: str, kind: str, name: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        remove_entry(text, kind, name)  # type: ignore[arg-type]
    said = refused.value.diagnostic()
    assert "not written as [tables] of its own" in said and "sp policy edit" in said


def test_an_array_of_tables_after_the_entry_is_kept_and_ends_the_cut() -> None:
    text = _hosts() + '\n[[callers.rules]]\nexe = "/usr/bin/claude"\n'
    before = tomllib.loads(text)
    host = next(iter(before["ssh"]["hosts"]))
    done = remove_entry(text, "ssh", host)
    after = tomllib.loads(done.text)
    assert after["callers"] == before["callers"]  # the caller rules stay, whole
    assert host not in after.get("ssh", {}).get("hosts", {})


def test_a_value_where_a_table_of_users_belongs_is_refused_not_a_crash() -> None:
    text = '[credentials.k]\nkind = "token"\n\n[ssh]\nhosts = 3\n'
    with pytest.raises(ConfigError):
        remove_entry(text, "credential", "k")
