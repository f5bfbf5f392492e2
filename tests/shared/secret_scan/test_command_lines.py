"""Secrets on command lines: the value after a secret-like flag in any spelling, curl's ``-u``,
``sshpass -p``, MySQL's glued ``-p``, PowerShell's secure strings and libcurl's options set in
code. Each is found with its exact span; the same lines with a variable, a placeholder, a prompt
or a file in the secret's place read unchanged."""

from __future__ import annotations

import time

import pytest

from safeport.shared.secret_scan import find_secrets
from tests.shared.secret_scan.drawn_values import assert_clean, assert_only_secret


@pytest.mark.parametrize(
    "template",
    [
        "gpg --batch --passphrase {value} --decrypt notes.gpg\n",
        "deploy.sh --password {value} --host db1\n",
        "restic backup --pass '{value}' /srv\n",
        "New-Service -Name app -Password '{value}'\n",
        'Invoke-Deploy -Domain corp -Password "{value}"\n',
        "vault-cli --token {value} read kv/app\n",
        "runner register -secret {value}\n",
        "tool --super-secret_token {value}\n",
        '    --oauth2-bearer "{value}" \\\n',
        "client --api-key {value} --region eu\n",
        "login --client-secret={value}\n",
        "gh-sync --auth-token '{value}'\n",
        "mvn verify -Dsonar.password={value}\n",
        'args = ["--token", "x"]; cmd --access-token {value}\n',
    ],
)
def test_a_secret_like_flags_value(template: str) -> None:
    assert_only_secret(template)


@pytest.mark.parametrize(
    "line",
    [
        'gpg --batch --passphrase "$GPG_PASSPHRASE" --decrypt notes.gpg\n',
        "docker login --password-stdin registry.example.org\n",
        "echo $PW | tool --password-file /run/secrets/db\n",
        "tool --token <token>\n",
        "tool --token ${TOKEN} --verbose\n",
        "tool --password PASSWORD\n",
        "tool --api-key YOUR_API_KEY\n",
        "tool --client-secret changeme\n",
        "tool --token --verbose\n",
        'parser.add_argument("--token", help="the token to use")\n',
        "  --token TOKEN         The token to use\n",
        "tool --token=$(cat token.txt)\n",
        "mvn verify -Dsonar.password=${SONAR_PASSWORD}\n",
        "tool --no-password upload\n",
    ],
)
def test_flag_look_alikes_read_unchanged(line: str) -> None:
    assert_clean(line)


@pytest.mark.parametrize(
    "template",
    [
        'curl -X PUT -u "deploy:{value}" https://api.example.net\n',
        "curl -u admin:{value} https://api.example.net\n",
        "curl --user ci-bot:{value} -d @body.json https://h.example.net\n",
        "curl --user='svc:{value}' https://h.example.net\n",
        "sshpass -p {value} ssh deploy@10.0.0.5\n",
        "sshpass -p'{value}' scp f deploy@h:\n",
        "mysql -u root -p{value} -h db.internal app\n",
        "docker login -u ci -p {value} registry.example.org\n",
        "helm registry login ghcr.example.org -u bot -p'{value}'\n",
        "sqlcmd -S db.internal -U sa -P {value} -Q 'SELECT 1'\n",
        "redis-cli -h cache -a {value} ping\n",
        'ssh-keygen -t ed25519 -N "{value}" -f deploy_key\n',
        "keytool -list -keystore ks.jks -storepass {value}\n",
        "openssl pkcs12 -in cert.p12 -passin pass:{value} -nodes\n",
    ],
)
def test_clients_that_take_a_password_of_their_own(template: str) -> None:
    assert_only_secret(template)


@pytest.mark.parametrize(
    "template",
    [
        # curl's options one to a line, the user on a line of its own
        "curl -X POST https://h.example.net/rest \\\n  -d 'x' \\\n  -u ops:{value}\n",
        "curl https://h.example.net/token \\\r\n    --user app:{value} --data a=b\n",
        # quoted as the shell quotes one word: the password alone, or in two pieces
        "curl --user ops:'{value}' -X PATCH https://h.example.net\n",
        'curl -u ops:"{value}" https://h.example.net\n',
        # an API key passed as the user, the password left empty
        'curl -u "{value}:" https://h.example.net:9200\n',
        "curl -u {value}: https://h.example.net/v1/charges\n",
        # a -u inside another argument's text first; the user given twice (curl takes the last)
        'curl -X POST -d "$(sort -u ids.txt)" -u ops:{value} https://h.example.net\n',
        "curl --user ops:x --user ops:{value} https://h.example.net\n",
        # the user from a command substitution (a Makefile's recipe), flags clustered
        "deploy:\n\tcurl -u $(DEPLOY_USER):{value} https://h.example.net\n",
        "curl -sSu ops:{value} https://h.example.net\n",
        "curl -U proxyuser:{value} -x http://proxy.example.net:3128 https://h.example.net\n",
        # the continued line not indented; ANSI-C quoting
        "curl https://h.example.net \\\n-u ops:{value}\n",
        "curl -u ops:$'{value}' https://h.example.net\n",
        # a snippet whose quote is never closed
        "curl -u 'ops:{value}\n",
        # a Windows line's end; a command inside another language's string
        "curl -u ops:{value}\r\n",
        'subprocess.check_output("curl -u ops:{value}", shell=True)\n',
        '{{"cmd": "curl -u ops:{value}", "timeout": 30}}\n',
        "ssh deploy@h.example.net 'curl -u ops:{value}' && echo ok\n",
        # a flag that ends in a capital U is not curl's user flag
        'curl -XPUT -H "X-Env: -uat" -u elastic:{value} https://es.example.net:9200/idx\n',
    ],
)
def test_curl_users_password_in_every_spelling(template: str) -> None:
    assert_only_secret(template)


def test_a_password_the_shell_joins_or_escapes_is_withheld_whole() -> None:
    for text, secret in (
        # read plainly when the shell's reading cuts the password at a mark
        ("curl -u admin:P4ss&w0rd2024Xq https://h.example.net\n", "P4ss&w0rd2024Xq"),
        # the letters of curl's name inside the password do not end the command's look
        ("curl -u ops:curlXk9mQ2vL7pRzT4 https://h.example.net\n", "curlXk9mQ2vL7pRzT4"),
        ("curl --user ops:Xk9mQ2v\\\nL7pRzT4 https://h.example.net\n", "Xk9mQ2v\\\nL7pRzT4"),
        ('curl -u "ops:Pa\\"ss9Xk2q7" https://h.example.net\n', 'Pa\\"ss9Xk2q7'),
    ):
        assert [text[s.start : s.end] for s in find_secrets(text)] == [secret], text


def test_a_password_of_letters_drawn_without_digits_after_curls_user() -> None:
    # No digit, as a generator with digits turned off draws one; a word would be served.
    text = "curl -u deploy:qYtwKvBnDxRpLmZs https://h.example.net\n"
    assert [text[s.start : s.end] for s in find_secrets(text)] == ["qYtwKvBnDxRpLmZs"]


@pytest.mark.parametrize(
    "line",
    [
        'curl -u "$USER:$TOKEN" https://h.example.net\n',
        "curl -u admin:admin https://h.example.net\n",
        "curl -u deploy: https://h.example.net\n",
        "curl -u deploy:deployment https://h.example.net\n",
        "curl https://h.example.net \\\n  -u $CI_USER:$CI_TOKEN\n",
        "curl -u 'ops:$(cat pw.txt)' https://h.example.net\n",
        "curl https://h.example.net\n-u line:not_a_curl_option_here\n",
        'curl --user "${CI_USER}:${CI_PASS}" https://h.example.net\n',
        'sshpass -p "$SSHPASS" ssh deploy@h\n',
        "sshpass -f ~/.pw ssh deploy@h\n",
        "pycurl.Curl()  # curl -u is not used here\n",
        'docker login -u ci -p "$CI_REGISTRY_PASSWORD" registry.example.org\n',
        "docker login --password-stdin -u ci registry.example.org\n",
        "sqlcmd -S db -U sa -P $(SA_PASSWORD)\n",
        "redis-cli -a $REDIS_PASSWORD ping\n",
        'ssh-keygen -t ed25519 -N "" -f deploy_key\n',
        "openssl pkcs12 -in cert.p12 -passin env:P12_PASS -nodes\n",
        "def login(user, password):  # -p is not a flag here\n",
    ],
)
def test_client_look_alikes_read_unchanged(line: str) -> None:
    assert_clean(line)


@pytest.mark.parametrize(
    "template",
    [
        '$pw = ConvertTo-SecureString "{value}" -AsPlainText -Force\n',
        "$pw = ConvertTo-SecureString -String '{value}' -AsPlainText -Force\n",
        "ConvertTo-SecureString -String -Force {value}\n",
        '"convertto-securestring \\"{value}\\" -asplaintext"\n',
    ],
)
def test_powershell_secure_strings_from_plain_text(template: str) -> None:
    assert_only_secret(template)


@pytest.mark.parametrize(
    "line",
    [
        "$pw = ConvertTo-SecureString $plain -AsPlainText -Force\n",
        "$pw = ConvertTo-SecureString -String $env:DEPLOY_PW -AsPlainText -Force\n",
        'ConvertTo-SecureString "<password>" -AsPlainText\n',
        "$encrypted | ConvertTo-SecureString\n",
    ],
)
def test_secure_string_look_alikes_read_unchanged(line: str) -> None:
    assert_clean(line)


@pytest.mark.parametrize(
    "template",
    [
        'curl_easy_setopt(curl, CURLOPT_PASSWORD, "{value}");\n',
        'curl_easy_setopt(h, CURLOPT_PROXYPASSWORD, "{value}");\n',
        "curl_setopt($ch, CURLOPT_USERPWD, 'svc:{value}');\n",
        'curl_easy_setopt(curl, CURLOPT_XOAUTH2_BEARER, "{value}");\n',
        'curl_easy_setopt(curl, CURLOPT_KEYPASSWD, "{value}");\n',
    ],
)
def test_libcurl_secret_options(template: str) -> None:
    assert_only_secret(template)


@pytest.mark.parametrize(
    "line",
    [
        "curl_easy_setopt(curl, CURLOPT_PASSWORD, password);\n",
        'curl_easy_setopt(curl, CURLOPT_USERPWD, "user:%s");\n',
        'curl_easy_setopt(curl, CURLOPT_PASSWORD, "changeme");\n',
        'curl_easy_setopt(curl, CURLOPT_USERNAME, "deploy-bot-2024");\n',
    ],
)
def test_libcurl_look_alikes_read_unchanged(line: str) -> None:
    assert_clean(line)


def test_long_lines_of_command_near_misses_scan_in_linear_time() -> None:
    line = (
        ("curl -u " * 20_000)
        + ("sshpass " * 20_000)
        + ("ConvertTo-SecureString -Force " * 10_000)
        + ("--token --token " * 10_000)
        + ("CURLOPT_PASSWORD, " * 10_000)
    )
    started = time.process_time()
    assert find_secrets(line) == []
    assert time.process_time() - started < 3.0


@pytest.mark.parametrize(
    "text",
    ["curl -X POST \\", "curl \\\n\\\n\\", "curl -u ops:\\\r\n", "curl " + "\\\n" * 400 + "-u a:b"],
)
def test_a_command_continued_to_the_texts_end_is_read_to_its_end(text: str) -> None:
    # The continuation ends with the text: the look stops there, finding nothing.
    assert_clean(text)
