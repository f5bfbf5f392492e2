"""Credentials in URLs in the shapes the first rule missed: a login that is itself an email
address (``scheme://me@example.com:pw@host``), and a secret parameter in a query that was
URL-encoded into another URL (``…%26token%3D…%26…``)."""

from __future__ import annotations

import secrets

import pytest

from safeport.shared.secret_scan import find_secrets


def fresh() -> str:
    return secrets.token_urlsafe(12).replace("-", "k").replace("_", "Q") + "7"


def assert_only(template: str, value: str) -> None:
    text = template.format(value=value)
    at = text.index(value)
    assert [(s.start, s.end) for s in find_secrets(text)] == [(at, at + len(value))], text


@pytest.mark.parametrize(
    "template",
    [
        'mail = "smtps://ann.lee@corp.example:{value}@smtp.corp.example:465"\n',
        "IMAP_URL=imaps://bot+alerts@mail.example.org:{value}@imap.example.org\n",
        "ftp://deploy@build.internal:{value}@files.internal/out/\n",
        "  url: amqp://svc@tenant:{value}@mq.internal:5672/vhost\n",
        "see https://ops@example.net:{value}@example.net/status for details\n",
    ],
)
def test_a_password_after_an_email_login_is_withheld(template: str) -> None:
    assert_only(template, fresh())


@pytest.mark.parametrize(
    "template",
    [
        'u = "https://h.example/cb?next=%2Fx%3Fa%3D1%26token%3D{value}%26v%3D2"\n',
        "redirect=https%3A%2F%2Fapi.example%3Faccess_token%3D{value}%26page%3D3\n",
        "?state=abc&return=%3Fapi_key%3D{value}\n",
        "link: /go?to=secret%3D{value}%26lang%3Den\n",
        "https://h.example/?r=password%3D{value}\n",
    ],
)
def test_a_secret_parameter_of_an_encoded_query_is_withheld(template: str) -> None:
    assert_only(template, fresh())


@pytest.mark.parametrize(
    "line",
    [
        "see http://user@host.example:8080/path\n",
        "ssh://git@github.com:org/repo@v1\n",
        "smtp://ann@example.com:${SMTP_PASSWORD}@smtp.example.com\n",
        "mailto:ann@example.com?subject=hi\n",
        "https://h.example/cb?next=%2Fx%3Ftokens%3D25%26page%3D2\n",
        "https://h.example/cb?next=%26token%3D%7BTOKEN%7D%26\n",
        "https://h.example/cb?next=%26token_type%3Dbearer%26\n",
        "https://h.example/cb?next=%26token%3Dnone%26\n",
    ],
)
def test_look_alikes_stay_served(line: str) -> None:
    assert find_secrets(line) == [], line
