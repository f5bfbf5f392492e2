"""Property tests over everything that parses hostile input: frames, request schemas, the two
TOML loaders, argument validators, SSH command templating and request paths.

Each property says what must hold for *every* input, not only the cases written down elsewhere:
hostile bytes are refused with the project's own error (never a foreign exception, never a
crash), and what is accepted keeps its guarantee. Budget: :mod:`tests.drills.fuzz_budget`.
"""

from __future__ import annotations

import contextlib
import json
import posixpath
import re
import shlex
import struct
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st
from pydantic import ValidationError

from harness.gateway import POLICY
from safeport.action_gateway.executors.interface import ActionError
from safeport.action_gateway.executors.ssh.command import render_argv, render_command
from safeport.action_gateway.policy.arguments import ArgumentRejected, validate_args
from safeport.context_server.policy.private_names import normalise
from safeport.context_server.policy.private_tables import DEFAULT_PRIVATE_FOLDERS
from safeport.context_server.policy.read_policy import InvalidInput, ReadPolicy
from safeport.context_server.policy.request_path import parse_request_path
from safeport.context_server.workspace.serving_config import load_settings
from safeport.errors import ConfigError, Error, FrameTooLarge, WireError
from safeport.shared.schemas.config import SshCommand, parse_gateway_policy
from safeport.shared.schemas.config_params import ParamSpec
from safeport.shared.schemas.control import CONTROL_REQUEST
from safeport.shared.schemas.wire import AGENT_REQUEST
from safeport.shared.wire import (
    HEADER,
    MAX_REQUEST_BYTES,
    decode_payload,
    encode_frame,
    frame_length,
)
from tests.drills.fuzz_budget import fuzz

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64)  # the decoders bound a number's length
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=20,
)

# -- frames ---------------------------------------------------------------------------------------


@fuzz
@given(st.binary(max_size=512))
def test_any_payload_decodes_to_an_object_or_a_wire_error(payload: bytes) -> None:
    try:
        value = decode_payload(payload)
    except WireError:
        return
    assert isinstance(value, dict)


@fuzz
@given(st.dictionaries(st.text(max_size=16), JSON, max_size=6))
def test_every_object_survives_a_frame_round_trip(message: dict[str, Any]) -> None:
    frame = encode_frame(message)
    length = frame_length(frame[: HEADER.size], MAX_REQUEST_BYTES * 64)
    assert length == len(frame) - HEADER.size
    assert decode_payload(frame[HEADER.size :]) == json.loads(json.dumps(message))


@fuzz
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_a_declared_length_over_the_limit_is_refused_before_any_payload(length: int) -> None:
    header = struct.pack(">I", length)
    if length > MAX_REQUEST_BYTES:
        with pytest.raises(FrameTooLarge):
            frame_length(header, MAX_REQUEST_BYTES)
    else:
        assert frame_length(header, MAX_REQUEST_BYTES) == length


# -- request schemas ------------------------------------------------------------------------------

REQUEST_KEYS = ["v", "id", "type", "action", "host_id", "command_id", "service_id"]
REQUEST_KEYS += ["operation_id", "args", "op", "params", "client", "request_id"]


@st.composite
def requests(draw: st.DrawFn) -> dict[str, Any]:
    """Mostly the right keys with wrong, odd or right values, and some junk keys."""
    keys = draw(st.lists(st.sampled_from(REQUEST_KEYS) | st.text(max_size=6), max_size=8))
    values = st.sampled_from([1, "propose", "hello", "control", "ssh_exec", "http_request"]) | JSON
    return {key: draw(values) for key in keys}


@fuzz
@given(requests())
def test_any_request_object_validates_or_is_a_validation_error(message: dict[str, Any]) -> None:
    for adapter in (AGENT_REQUEST, CONTROL_REQUEST):
        with contextlib.suppress(ValidationError):
            adapter.validate_python(message)


# -- the TOML loaders -----------------------------------------------------------------------------

TOML_LINES = st.sampled_from(POLICY.splitlines()) | st.text(max_size=40)


@fuzz
@given(st.lists(TOML_LINES, max_size=40), st.data())
def test_gateway_toml_is_a_policy_or_a_config_error(lines: list[str], data: st.DataObject) -> None:
    """Lines of a real policy shuffled, dropped and mixed with junk."""
    text = "\n".join(data.draw(st.permutations(lines)))
    try:
        policy, digest = parse_gateway_policy(text)
    except ConfigError:
        return
    assert len(digest) == 64
    for host in policy.ssh.hosts.values():
        assert host.credential in policy.credentials  # references resolve in what is accepted


@fuzz
@given(st.text(max_size=300))
def test_gateway_toml_from_any_text_is_a_policy_or_a_config_error(text: str) -> None:
    with contextlib.suppress(ConfigError):
        parse_gateway_policy(text)


CONTEXT_LINES = st.sampled_from(
    [
        "[private]",
        'folders = ["secrets", "vault"]',
        'patterns = ["*.key", "*.pem"]',
        'projects = ["a", "b"]',
        "folders = 3",
        'patterns = ["["]',
        "[private.extra]",
        "unknown = true",
    ]
) | st.text(max_size=40)


@fuzz
@given(st.lists(CONTEXT_LINES, max_size=12))
def test_context_toml_is_settings_or_a_config_error(tmp_path: Path, lines: list[str]) -> None:
    path = tmp_path / "context.toml"
    path.write_text("\n".join(lines), encoding="utf-8", errors="surrogatepass")
    try:
        load_settings(path)
    except ConfigError:
        pass
    except UnicodeDecodeError:
        assume(False)  # surrogates written raw: not text a person could have typed


# -- arguments and templating ---------------------------------------------------------------------

SPECS = st.sampled_from(
    [
        ParamSpec(pattern="^[a-z0-9-]{1,48}$"),
        ParamSpec(pattern=".*"),
        ParamSpec(pattern="[^ ]+", max_length=16),
        ParamSpec(enum=["staging", "production", "-x"]),
        ParamSpec(type="int", min=1, max=500),
        ParamSpec(type="int"),
    ]
)
VALUES = st.text(max_size=80) | st.integers() | st.booleans() | st.none() | st.floats()


@fuzz
@given(SPECS, VALUES, st.booleans())
def test_an_accepted_argument_keeps_every_rule_of_its_spec(
    spec: ParamSpec, value: object, dash_ok: bool
) -> None:
    allow = ["p"] if dash_ok else []
    try:
        accepted = validate_args({"p": spec}, {"p": value}, allow_leading_dash=allow)["p"]
    except ArgumentRejected as exc:
        assert not isinstance(value, str) or value not in exc.message or len(value) < 3
        return
    assert accepted == value and not isinstance(accepted, bool)
    if isinstance(accepted, str):
        assert len(accepted) <= spec.max_length
        assert not any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in accepted)
        assert dash_ok or not accepted.startswith("-")
        assert accepted in spec.enum if spec.enum is not None else spec.pattern is not None
    else:
        assert spec.type == "int"
        assert spec.min is None or accepted >= spec.min
        assert spec.max is None or accepted <= spec.max


COMMAND = SshCommand(
    argv=["grep", "-n", "--", "{needle}", "/var/log/{file}.log"],
    params={"needle": ParamSpec(pattern=".*", max_length=200), "file": ParamSpec(pattern=".+")},
)


@fuzz
@given(st.text(max_size=200), st.text(max_size=40))
def test_a_rendered_command_splits_back_into_the_declared_words(needle: str, file: str) -> None:
    """Whatever the values, the remote shell sees exactly the declared argv, each value one
    literal word: never a second command, never an option."""
    args = {"needle": needle, "file": file}
    try:
        rendered = render_command(COMMAND, args)
    except ActionError:
        return
    assert shlex.split(rendered) == render_argv(COMMAND, args)
    assert shlex.split(rendered) == ["grep", "-n", "--", needle, f"/var/log/{file}.log"]


# -- request paths --------------------------------------------------------------------------------

PATH_PARTS = st.sampled_from(["..", ".", "", "a", "b c", "%2e%2e", "~", "C:", "\\", "é", "\x00"])


@fuzz
@given(st.lists(PATH_PARTS | st.text(max_size=8), max_size=8), st.booleans())
def test_an_accepted_path_never_leaves_its_root(parts: list[str], absolute: bool) -> None:
    text = ("/" if absolute else "") + "/".join(parts)
    try:
        request = parse_request_path(text, ["ws"])
    except InvalidInput:
        return
    joined = posixpath.normpath(posixpath.join("/root/ws", *request.parts))
    assert joined == "/root/ws" or joined.startswith("/root/ws/")
    assert all(part not in ("", ".", "..") and "/" not in part for part in request.parts)
    # Normalising again changes nothing: what was accepted is already in its final form.
    assert parse_request_path("./" + request.display, ["ws"]) == request
    try:
        assert parse_request_path(request.display, ["ws"]) == request
    except InvalidInput:
        # A top-level name shaped like `~x` or `C:` is reachable as `./~x` only: bare, it is
        # refused as a home-folder or drive path, on purpose (refused, never widened).
        assert re.match(r"~|[A-Za-z]:", request.parts[0]), request


PRIVATE = [*sorted(DEFAULT_PRIVATE_FOLDERS)[:6], ".env", "id_rsa", "credentials.json"]
DECORATIONS = st.sampled_from(
    ["{}~", "{}.bak", "{}.orig", "{}.old", ".{}.swp", "#{}#", "{} (2)", "{}.gz", "{} ", "{}."]
)


@fuzz
@example(name=".aws", decorations=["#{}#", ".{}.swp", "{}~"], case=str)  # found by this test
@given(
    st.sampled_from(PRIVATE),
    st.lists(DECORATIONS, max_size=3),
    st.sampled_from([str, str.upper, str.title]),
)
def test_a_private_name_stays_private_under_backup_and_editor_decorations(
    name: str, decorations: list[str], case: Any
) -> None:
    policy = ReadPolicy()
    assume(policy.is_private_name(name))
    decorated = case(name)
    for decoration in decorations:
        decorated = decoration.format(decorated)
    assert policy.is_private_name(decorated), decorated


@fuzz
@given(st.text(max_size=30))
def test_name_normalisation_is_idempotent(name: str) -> None:
    assert normalise(normalise(name)) == normalise(name)


def test_the_property_tests_would_see_a_foreign_exception() -> None:
    """The loaders' contract is "a result or the project's own error": tomllib alone breaks it,
    so a loader that forgot to wrap it would fail the properties above."""
    with pytest.raises(tomllib.TOMLDecodeError):
        tomllib.loads("[")
    assert not issubclass(tomllib.TOMLDecodeError, Error)
