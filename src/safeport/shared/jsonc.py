"""JSON with comments (VS Code's JSONC): read, and edit one member in place.

VS Code's `mcp.json` and its settings allow `//` and `/* */` comments and trailing commas. A
client entry is merged into such a file by editing only the text of the one member it changes,
so every comment, the member order and the file's own layout stay as the person wrote them.
A file that does not parse is refused with the line and column of the first problem; an edit
is returned only after the result is parsed again and found to hold exactly the intended data.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from safeport.errors import ConfigError

_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_DECODER = json.JSONDecoder()
_LITERALS = {"true": True, "false": False, "null": None}


class JsoncError(ConfigError):
    """The text is not JSON (comments and trailing commas allowed), at ``line``:``column``."""

    def __init__(self, message: str, text: str, offset: int) -> None:
        self.line = text.count("\n", 0, offset) + 1
        self.column = offset - (text.rfind("\n", 0, offset) + 1) + 1
        super().__init__(f"line {self.line}, column {self.column}: {message}")


@dataclass
class Node:
    """A parsed value and where it is in the text; objects keep their members' positions."""

    value: Any
    start: int
    end: int
    members: dict[str, Member] = field(default_factory=dict)


@dataclass
class Member:
    key: str
    key_start: int
    node: Node


def loads(text: str) -> Any:
    """The data of a JSONC text."""
    return parse(text).value


def parse(text: str) -> Node:
    parser = _Parser(text)
    parser.skip()
    node = parser.value()
    parser.skip()
    if parser.pos != len(text):
        raise JsoncError("unexpected text after the value", text, parser.pos)
    return node


def with_member(text: str, path: Sequence[str], value: Any) -> str:
    """``text`` with the member at ``path`` (object keys) set to ``value``, creating the
    objects on the way; nothing else in the text changes."""
    if not text.strip():
        return json.dumps(_nest(path, value), indent=2) + "\n"
    root = parse(text)
    node = root
    for depth, key in enumerate(path):
        if not isinstance(node.value, dict):
            raise ConfigError(f"`{'.'.join(path[:depth])}` is not an object")
        member = node.members.get(key)
        if member is None:
            edited = _insert(text, node, key, _nest(path[depth + 1 :], value))
            break
        if depth == len(path) - 1:
            indent = _line_indent(text, member.key_start)
            edited = (
                text[: member.node.start]
                + _dumps(value, indent, _indent_unit(text))
                + text[member.node.end :]
            )
            break
        node = member.node
    expected = _set(loads(text), path, value)
    if loads(edited) != expected:  # pragma: no cover - a guard against a mistake above
        raise ConfigError("the edit would change more than the one entry")
    return edited


def without_member(text: str, path: Sequence[str]) -> str:
    """``text`` with the member at ``path`` removed (and its comma); unchanged if absent."""
    root = parse(text)
    node, member = root, None
    for key in path:
        if not isinstance(node.value, dict) or key not in node.members:
            return text
        member = node.members[key]
        node = member.node
    assert member is not None
    start, end = member.key_start, member.node.end
    after = _skip(text, end)
    if after < len(text) and text[after] == ",":
        end = after + 1
    else:
        before = _skip_back(text, start)
        if before > 0 and text[before - 1] == ",":
            start = before - 1
    # Take the removed member's own line with it when it stood alone on that line.
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    if not text[line_start:start].strip() and (line_end == -1 or not text[end:line_end].strip()):
        start, end = line_start, (line_end + 1 if line_end != -1 else len(text))
    edited = text[:start] + text[end:]
    expected = loads(text)
    _pop(expected, path)
    if loads(edited) != expected:  # pragma: no cover - a guard against a mistake above
        raise ConfigError("the edit would change more than the one entry")
    return edited


def _insert(text: str, obj: Node, key: str, value: Any) -> str:
    unit = _indent_unit(text)
    if obj.members:
        last = max(obj.members.values(), key=lambda m: m.node.end)
        indent = _line_indent(text, last.key_start)
        value_end = last.node.end
        after = _skip(text, value_end)
        has_comma = text[after] == ","
        cut = after + 1 if has_comma else value_end
        # After the last member's own line, so a comment that ends that line stays with it.
        line_end = text.find("\n", cut)
        tail = text[cut:line_end].strip() if line_end != -1 else "x"
        position = line_end if not tail or tail.startswith("//") else cut
        return (
            text[:value_end]
            + ("" if has_comma else ",")
            + text[value_end:position]
            + f"\n{indent}{json.dumps(key)}: {_dumps(value, indent, unit)}"
            + text[position:]
        )
    outer = _line_indent(text, obj.start)
    member = f"\n{outer + unit}{json.dumps(key)}: {_dumps(value, outer + unit, unit)}"
    inner = text[obj.start + 1 : obj.end - 1]
    if not inner.strip():
        return text[: obj.start + 1] + member + f"\n{outer}" + text[obj.end - 1 :]
    return text[: obj.start + 1] + member + inner + text[obj.end - 1 :]  # keeps its comments


def _dumps(value: Any, indent: str, unit: str) -> str:
    lines = json.dumps(value, indent=unit).splitlines()
    return "\n".join([lines[0], *(indent + line for line in lines[1:])])


def _line_indent(text: str, offset: int) -> str:
    start = text.rfind("\n", 0, offset) + 1
    line = text[start:offset]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _indent_unit(text: str) -> str:
    """The file's own indentation step (two spaces when it shows none)."""
    for line in text.splitlines():
        stripped = line.lstrip(" \t")
        if stripped and len(stripped) < len(line):
            return line[: len(line) - len(stripped)]
    return "  "


def _nest(path: Sequence[str], value: Any) -> Any:
    for key in reversed(path):
        value = {key: value}
    return value


def _set(data: Any, path: Sequence[str], value: Any) -> Any:
    node = data
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    return data


def _pop(data: Any, path: Sequence[str]) -> None:
    node = data
    for key in path[:-1]:
        node = node[key]
    node.pop(path[-1], None)


def _skip(text: str, pos: int) -> int:
    """The offset of the next token after whitespace and comments."""
    while pos < len(text):
        if text[pos] in " \t\r\n":
            pos += 1
        elif text.startswith("//", pos):
            newline = text.find("\n", pos)
            pos = len(text) if newline == -1 else newline + 1
        elif text.startswith("/*", pos):
            close = text.find("*/", pos + 2)
            if close == -1:
                raise JsoncError("unterminated /* comment", text, pos)
            pos = close + 2
        else:
            break
    return pos


def _skip_back(text: str, pos: int) -> int:
    """The offset just after the previous non-blank character (comments are not skipped)."""
    while pos > 0 and text[pos - 1] in " \t\r\n":
        pos -= 1
    return pos


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def skip(self) -> None:
        self.pos = _skip(self.text, self.pos)

    def fail(self, message: str) -> JsoncError:
        return JsoncError(message, self.text, self.pos)

    def value(self) -> Node:
        text, start = self.text, self.pos
        if start >= len(text):
            raise self.fail("the text ends where a value was expected")
        char = text[start]
        if char == "{":
            return self.obj()
        if char == "[":
            return self.array()
        if char == '"':
            return Node(self.string(), start, self.pos)
        for word, literal in _LITERALS.items():
            if text.startswith(word, start):
                self.pos += len(word)
                return Node(literal, start, self.pos)
        number = _NUMBER.match(text, start)
        if number is None:
            raise self.fail(f"unexpected {text[start]!r}")
        self.pos = number.end()
        return Node(json.loads(number.group()), start, self.pos)

    def string(self) -> str:
        try:
            value, end = _DECODER.raw_decode(self.text, self.pos)
        except json.JSONDecodeError as exc:
            self.pos = exc.pos
            raise self.fail(exc.msg) from exc
        self.pos = end
        assert isinstance(value, str)
        return value

    def obj(self) -> Node:
        node = Node({}, self.pos, self.pos)
        self.pos += 1
        while True:
            self.skip()
            if self.peek() == "}":
                break
            if self.peek() != '"':
                raise self.fail("expected a quoted key or '}'")
            key_start = self.pos
            key = self.string()
            self.skip()
            if self.peek() != ":":
                raise self.fail("expected ':' after the key")
            self.pos += 1
            self.skip()
            member = self.value()
            node.value[key] = member.value
            node.members[key] = Member(key, key_start, member)
            self.skip()
            if self.peek() == ",":
                self.pos += 1
                continue
            if self.peek() != "}":
                raise self.fail("expected ',' or '}'")
            break
        self.pos += 1
        node.end = self.pos
        return node

    def array(self) -> Node:
        node = Node([], self.pos, self.pos)
        self.pos += 1
        while True:
            self.skip()
            if self.peek() == "]":
                break
            node.value.append(self.value().value)
            self.skip()
            if self.peek() == ",":
                self.pos += 1
                continue
            if self.peek() != "]":
                raise self.fail("expected ',' or ']'")
            break
        self.pos += 1
        node.end = self.pos
        return node

    def peek(self) -> str:
        if self.pos >= len(self.text):
            raise self.fail("the text ends inside an object or array")
        return self.text[self.pos]
