"""Each kind of OpenAPI schema becomes one param constraint, bounded by the schema where it
says enough, and flagged with a conservative stand-in where it does not (pure)."""

from __future__ import annotations

import re

import pytest

from safeport.authoring.openapi_params import map_schema
from safeport.shared.schemas.config_params import ParamSpec


def test_an_enum_becomes_its_allowed_values() -> None:
    mapped = map_schema({"type": "string", "enum": ["open", "closed", "all"]}, "query")
    assert mapped.spec == ParamSpec(enum=["open", "closed", "all"], max_length=6)
    assert mapped.flags == ()


def test_a_nullable_enum_drops_null_and_a_const_is_a_single_value() -> None:
    assert map_schema({"enum": ["a", None]}, "query").spec.enum == ["a"]
    assert map_schema({"const": "v1"}, "query").spec.enum == ["v1"]


def test_an_integer_keeps_its_bounds_exclusive_ones_included() -> None:
    mapped = map_schema({"type": "integer", "minimum": 1, "maximum": 100}, "query")
    assert mapped.spec == ParamSpec(type="int", min=1, max=100)
    assert mapped.flags == ()
    exclusive30 = {"type": "integer", "minimum": 0, "exclusiveMinimum": True, "maximum": 10}
    assert map_schema(exclusive30, "query").spec.min == 1
    exclusive31 = {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10}
    assert (
        map_schema(exclusive31, "query").spec.min,
        map_schema(exclusive31, "query").spec.max,
    ) == (1, 9)


def test_an_integer_without_a_maximum_is_flagged_and_never_negative() -> None:
    mapped = map_schema({"type": "integer", "minimum": -5}, "path")
    assert mapped.spec == ParamSpec(type="int", min=0)
    assert mapped.flags and "no maximum" in mapped.flags[0]


def test_an_integer_enum_is_the_range_it_spans() -> None:
    assert map_schema({"type": "integer", "enum": [1, 2, 3]}, "body").spec == ParamSpec(
        type="int", min=1, max=3
    )
    gappy = map_schema({"type": "integer", "enum": [1, 5]}, "query")
    assert gappy.spec == ParamSpec(type="int", min=1, max=5) and "from 1 to 5" in gappy.flags[0]


def test_a_pattern_is_kept_for_a_full_match_without_its_anchors() -> None:
    mapped = map_schema({"type": "string", "pattern": "^[a-f0-9]{40}$", "maxLength": 40}, "path")
    assert mapped.spec == ParamSpec(pattern="[a-f0-9]{40}", max_length=40)
    assert mapped.flags == ()
    assert map_schema({"pattern": r"^\d+\$$"}, "query").spec.pattern == r"\d+\$"


def test_a_pattern_python_cannot_read_is_flagged_and_replaced() -> None:
    mapped = map_schema({"type": "string", "pattern": r"^\p{L}+$"}, "query")
    assert mapped.spec == ParamSpec(pattern=".*", max_length=256)
    assert "not a Python regular expression" in mapped.flags[0]
    assert "any text up to 256" in mapped.flags[1]


@pytest.mark.parametrize(
    ("form", "good", "bad"),
    [
        ("date-time", "2024-05-01T12:00:00Z", "yesterday"),
        ("date", "2024-05-01", "2024-05-01T00:00:00Z"),
        ("uuid", "123e4567-e89b-12d3-a456-426614174000", "123"),
        ("email", "a@example.com", "a b@example.com"),
        ("uri", "https://example.com/x", "javascript:alert(1)"),
    ],
)
def test_a_format_without_a_pattern_becomes_one(form: str, good: str, bad: str) -> None:
    mapped = map_schema({"type": "string", "format": form}, "query")
    assert mapped.flags == () and mapped.spec.pattern is not None
    assert re.fullmatch(mapped.spec.pattern, good)
    assert not re.fullmatch(mapped.spec.pattern, bad)


def test_a_length_alone_bounds_a_string_and_is_capped_at_the_gateways_ceiling() -> None:
    assert map_schema({"type": "string", "maxLength": 80}, "body").spec == ParamSpec(
        pattern=".*", max_length=80
    )
    assert map_schema({"type": "string", "minLength": 2, "maxLength": 8}, "body").spec == (
        ParamSpec(pattern=".{2,}", max_length=8)
    )
    huge = map_schema({"type": "string", "maxLength": 65536}, "body")
    assert huge.spec.max_length == 4096 and "cut to it" in huge.flags[0]


def test_a_free_string_is_never_unbounded_and_always_flagged() -> None:
    segment = map_schema({"type": "string"}, "path")
    assert segment.spec == ParamSpec(pattern="[A-Za-z0-9._~-]+", max_length=100)
    text = map_schema({"type": "string"}, "body")
    assert text.spec == ParamSpec(pattern=".*", max_length=256)
    for mapped in (segment, text, map_schema({}, "query")):
        assert mapped.flags and "no pattern or length" in mapped.flags[-1]


def test_a_boolean_is_true_or_false_and_flagged_only_in_a_body() -> None:
    assert map_schema({"type": "boolean"}, "query").spec.enum == ["true", "false"]
    assert map_schema({"type": "boolean"}, "query").flags == ()
    assert "JSON string" in map_schema({"type": "boolean"}, "body").flags[0]


def test_a_number_is_bounded_decimal_text_and_flagged() -> None:
    mapped = map_schema({"type": "number"}, "query")
    assert mapped.spec.pattern is not None and re.fullmatch(mapped.spec.pattern, "12.5")
    assert not re.fullmatch(mapped.spec.pattern, "1e9")
    assert "decimal text" in mapped.flags[0]


def test_one_of_takes_the_string_form_and_says_so() -> None:
    mapped = map_schema(
        {"oneOf": [{"type": "integer"}, {"type": "string", "maxLength": 9}]}, "body"
    )
    assert mapped.spec == ParamSpec(pattern=".*", max_length=9)
    assert mapped.flags == ("oneOf: only the string form is accepted",)
    nullable = map_schema({"anyOf": [{"type": "integer", "maximum": 5}, {"type": "null"}]}, "body")
    assert nullable.spec == ParamSpec(type="int", min=0, max=5) and nullable.flags == ()
    listed = map_schema({"type": ["string", "integer"], "maxLength": 3}, "query")
    assert listed.spec.max_length == 3 and "only the string form" in listed.flags[0]


def test_all_of_is_merged_and_refs_are_followed_through_the_resolver() -> None:
    components = {"#/c/Sort": {"type": "string", "enum": ["created", "updated"]}}

    def resolve(node: object) -> object:
        if isinstance(node, dict) and "$ref" in node:
            return components[node["$ref"]]
        return node

    mapped = map_schema({"allOf": [{"$ref": "#/c/Sort"}], "description": "x"}, "query", resolve)
    assert mapped.spec.enum == ["created", "updated"]


def test_arrays_and_objects_are_flagged() -> None:
    array = map_schema({"type": "array", "items": {"type": "string", "maxLength": 50}}, "body")
    assert array.spec == ParamSpec(pattern=".*", max_length=50)
    assert array.flags == ("an array: exactly one item is sent",)
    obj = map_schema({"type": "object", "additionalProperties": True}, "query")
    assert obj.flags[0] == "an object: sent as text" and obj.spec.max_length == 256


@pytest.mark.parametrize("bound", [float("inf"), float("-inf"), float("nan")])
def test_an_infinite_or_nan_bound_says_nothing_and_is_flagged_as_no_bound(bound: float) -> None:
    mapped = map_schema({"type": "integer", "minimum": bound, "maximum": bound}, "query")
    assert mapped.spec == ParamSpec(type="int", min=0)
    assert mapped.flags and "no maximum" in mapped.flags[0]
