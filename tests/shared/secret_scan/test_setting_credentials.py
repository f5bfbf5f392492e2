"""Credentials a setting's name already says are credentials, and tokens whose type prefix ends
in a dot: each with fresh random values in the places people write them, beside the settings and
attributes of the same shape that hold none."""

from __future__ import annotations

import random
import string
import time

import pytest

from benchmarks.secret_corpus.tokens import ALNUM, HEX, UPPER_ALNUM, rand
from safeport.shared.secret_scan import find_secrets, redact


def _withheld(text: str, secret: str) -> None:
    served, findings = redact(text)
    assert findings, text
    assert secret not in served, served


@pytest.mark.parametrize(
    "template",
    [
        'BUNDLE_GEMS__{host}__COM: "{user}:{secret}"',  # .bundle/config
        "export BUNDLE_ENTERPRISE__{host}__COM={user}:{secret}",
        "export BUNDLE_ENTERPRISE__{host}__COM={user}:{secret}; bundle install",
        "ENV BUNDLE_RUBYGEMS__PKG__{host}__COM={user}:{secret}",  # a Dockerfile
        "  BUNDLE_GEMS__{host}__IO: '{user}:{secret}'",  # a CI file's env block
        "ENV BUNDLE_GEMS__{host}__COM {user}:{secret}",  # a Dockerfile's ENV without its sign
        'ENV["BUNDLE_GEMS__{host}__COM"] = "{user}:{secret}"',  # Ruby
        'BUNDLE_HTTPS://RUBYGEMS__PKG__{host}__COM/OWNER/: "{user}:{secret}"',  # URL-keyed
        "bundle config set --global gems.{host}.com {user}:{secret}",  # Bundler's own command
        "bundle config set https://rubygems.pkg.{host}.com/OWNER {user}:{secret}",
        'BUNDLE_GEMS__{host}__COM: "{user}:{secret}&x;y|z"',  # quoted: all of it
    ],
)
def test_a_bundler_host_credential_is_withheld(template: str) -> None:
    host, user = rand(9, string.ascii_uppercase), rand(8, HEX)
    secret = rand(20, ALNUM)
    _withheld(template.format(host=host, user=user, secret=secret), secret)


@pytest.mark.parametrize("spelling", ["x-oauth-basic", "X-OAuth-Basic"])
def test_a_token_given_as_the_bundler_user_is_withheld(spelling: str) -> None:
    token = rand(40, ALNUM)
    _withheld(f'BUNDLE_GITHUB__COM: "{token}:{spelling}"', token)


@pytest.mark.parametrize(
    "line",
    [
        'BUNDLE_BUILD__NOKOGIRI: "--use-system-libraries"',
        'BUNDLE_LOCAL__RACK: "/home/dev/src/rack"',
        "BUNDLE_MIRROR__HTTPS://RUBYGEMS__ORG/: https://mirror.example.com",
        'BUNDLE_PATH: "vendor/bundle"',
        'BUNDLE_GEMS__EXAMPLE__COM: "${GEM_USER}:${GEM_PASSWORD}"',
        "BUNDLE_GEMS__EXAMPLE__COM=deploy:changeme",
        'BUNDLE_RUBYGEMS__ORG: "https://rubygems.org/"',  # a URL, not user:password
        'BUNDLE_GEMS__EXAMPLE__COM="user:%GEM_PASS%"',  # a Windows variable
        "bundle config set path vendor/bundle",
        "bundle config set --local without development:test",
    ],
)
def test_bundler_settings_and_stand_ins_are_served(line: str) -> None:
    assert find_secrets(line) == [], line


@pytest.mark.parametrize("dashed", [True, False])
def test_a_onepassword_secret_key_is_withheld_with_or_without_its_inner_dash(dashed: bool) -> None:
    third = f"{rand(6, UPPER_ALNUM)}-{rand(5, UPPER_ALNUM)}" if dashed else rand(11, UPPER_ALNUM)
    rest = "-".join(rand(5, UPPER_ALNUM) for _ in range(3))
    key = f"A3-{rand(6, UPPER_ALNUM)}-{third}-{rest}"
    _withheld(f"Secret Key: {key}", key)


@pytest.mark.parametrize(
    "template",
    [
        "token: {prefix}.{body}",  # YAML
        "VAULT_TOKEN={prefix}.{body}",  # .env
        "export VAULT_TOKEN={prefix}.{body}",
        'token = "{prefix}.{body}"',
    ],
)
@pytest.mark.parametrize("prefix", ["s", "b", "hvs"])
def test_a_token_with_a_dotted_type_prefix_is_withheld_unquoted_too(
    template: str, prefix: str
) -> None:
    body = rand(24, ALNUM)
    _withheld(template.format(prefix=prefix, body=body), body)


@pytest.mark.parametrize(
    "line",
    [
        "token = self.frame.code.path",
        "token = s.generate_tokens_for_user",
        "api_key: cfg.SECRET_KEY_FALLBACK",
        "password = os.environ.get",
        "secret = np.random_state_default",
        "key = cred._private_key_pkcs12",
        "key=args.md5_authentication_key",
        "'private_key': self._private_key_pkcs8_pem",
        "token = self.AWS_IMDSV2_SESSION_TOKEN",
    ],
)
def test_attributes_under_a_secret_name_are_served(line: str) -> None:
    assert find_secrets(line) == [], line


@pytest.mark.parametrize(
    "template",
    [
        'variable "db_password" {{\n  default = "{secret}"\n}}',
        'variable "api_token" {{\n  description = "The API token"\n  type        = string\n'
        '  sensitive   = true\n  default     = "{secret}"\n}}',
        'variable "db_password" {{ default = "{secret}" }}',
        'variable "db_password" {{  # set in CI\n  default = "{secret}"\n}}',
        'variable "db_password" {{\n  validation {{\n'
        "    condition     = length(var.db_password) > 8\n"
        '    error_message = "too short"\n  }}\n  default = "{secret}"\n}}',
        'variable "api_token" {{\n  type = object({{\n    a = string\n  }})\n'
        '  default = "{secret}"\n}}',
    ],
)
def test_a_terraform_variable_default_under_a_secret_name_is_withheld(template: str) -> None:
    secret = rand(18, ALNUM)
    _withheld(template.format(secret=secret), secret)


@pytest.mark.parametrize(
    "text",
    [
        'variable "region" {\n  default = "eu-west-1"\n}',
        'variable "db_password" {\n  type = string\n}\n\nvariable "zone" {\n'
        '  default = "Xq3LmZp8RtV6nKw2"\n}',  # the default of the next block is not this one's
        'variable "api_token" {\n  default = ""\n}',
        'variable "api_token" {\n  default = "changeme"\n}',
        'variable "password" {\n  type = string }\nvariable "zone" {\n'
        '  default = "Xq3LmZp8RtV6nKw2"\n}',  # the block closed at its line's end
    ],
)
def test_terraform_variables_without_a_secret_default_are_served(text: str) -> None:
    assert find_secrets(text) == [], text


def test_many_variable_blocks_without_a_default_scan_in_linear_time() -> None:
    # Each opening looks a few lines further at most: four times the blocks, about four times
    # the work (CPU time, which other processes do not take).
    def seconds(count: int) -> float:
        text = 'variable "password" {\n  type = string\n}\n' * count
        started = time.process_time()
        find_secrets(text)
        return time.process_time() - started

    small, large = seconds(5_000), seconds(20_000)
    assert large < 8 * small + 0.5, (small, large)


@pytest.mark.parametrize(
    "unit",
    [
        'variable "pw" {',
        'variable "pw" { default',
        "BUNDLE_A__BB=u:",
        'BUNDLE_A__BB="u:',
        "BUNDLE_AB__CD:",
    ],
)
def test_repeated_openings_on_one_line_scan_in_linear_time(unit: str) -> None:
    def seconds(count: int) -> float:
        started = time.process_time()
        find_secrets(unit * count)
        return time.process_time() - started

    small, large = seconds(10_000), seconds(40_000)
    assert large < 8 * small + 0.5, (unit, small, large)


@pytest.mark.parametrize(
    "template",
    [
        "token {secret}",
        "Refreshing token {secret} for user 42",
        "INFO issued api token {secret}.",
        "password {secret}",
        'token "{secret}"',
        "token '{secret}'",
        "token `{secret}`",
        "token ({secret})",
        "token [{secret}]",
    ],
)
def test_a_drawn_value_right_after_a_secret_word_is_withheld(template: str) -> None:
    secret = rand(4, string.ascii_uppercase) + rand(2, string.digits) + rand(26, ALNUM)
    _withheld(template.format(secret=secret), secret)


@pytest.mark.parametrize(
    "line",
    [
        "token base64EncodedStringValue01",  # a name in camel case
        "Pass HttpClientBuilderV2WithRetries to the client.",
        "token Base64UrlSafeNoPadding2",
        "token X-Amz-Security-Token-2020",
        'token "Base64UrlSafeNoPadding2"',
        "the token abcdefghijklmnopqrstuvwxyz",
        "token refresh_token_expires_in_seconds",
        "key FVPULqgLlrmLRACg3jly4irybO83RqQ0",  # a weak word names a value by assignment only
    ],
)
def test_names_and_words_after_a_secret_word_are_served(line: str) -> None:
    assert find_secrets(line) == [], line


def test_nearly_every_drawn_value_after_a_secret_word_is_withheld() -> None:
    # A fixed draw: the test reads the same values every run. One in a few hundred random
    # values reads as words by chance and is served.
    draw = random.Random(20261208)
    values = ["".join(draw.choice(ALNUM) for _ in range(24)) for _ in range(400)]
    served = [value for value in values if not find_secrets(f"token {value}")]
    assert len(served) <= 8, served


@pytest.mark.parametrize("line", ["set DB_PASSWORD=%VAULT_DB_PASSWORD%", "password: %DB_PASS%"])
def test_a_windows_variable_is_a_lookup(line: str) -> None:
    assert find_secrets(line) == [], line


def test_a_password_holding_percent_signs_is_still_withheld() -> None:
    secret = f"%{rand(16)}%x"
    _withheld(f'password = "{secret}"', secret)
