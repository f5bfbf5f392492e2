"""Provider formats by family: each with fresh random bodies in every place people write one;
stand-ins written in a format's own shape, and the public ids beside a secret, left alone."""

from __future__ import annotations

import base64
import json
import secrets
import string
import time

import pytest

from benchmarks.secret_corpus.tokens import ALNUM, B64URL, BASE32, HEX, TOKENS, rand
from safeport.shared.secret_scan import find_secrets, redact

# corpus generator -> the kind its findings carry
NEW_FORMATS = {
    "gitlab-routable": "gitlab-token",
    "gitlab-runner": "gitlab-token",
    "gitlab-ci-job": "gitlab-token",
    "gitlab-oauth-secret": "gitlab-token",
    "gitlab-runner-registration": "gitlab-token",
    "gitlab-workspace": "gitlab-token",
    "docker-hub-org": "docker-hub-token",
    "docker-swarm-token": "docker-swarm-token",
    "docker-swarm-key": "docker-swarm-key",
    "discord-bot": "discord-bot-token",
    "discord-webhook": "discord-webhook",
    "notion": "notion-token",
    "notion-legacy": "notion-token",
    "vercel": "vercel-token",
    "vercel-integration": "vercel-token",
    "netlify": "netlify-token",
    "square-access": "square-token",
    "square-oauth-secret": "square-token",
    "dropbox-short-lived": "dropbox-token",
    "dropbox-long-lived": "dropbox-token",
    "jfrog-api-key": "jfrog-token",
    "jfrog-reference": "jfrog-token",
    "atlassian-api": "atlassian-token",
    "atlassian-data-center": "atlassian-token",
    "new-relic-user": "new-relic-key",
    "new-relic-browser": "new-relic-key",
    "new-relic-insights": "new-relic-key",
    "new-relic-license": "new-relic-key",
    "salesforce-session": "salesforce-session",
    "posthog-personal": "posthog-key",
    "posthog-project-secret": "posthog-key",
    "cloudflare-account": "cloudflare-token",
    "cloudflare-user": "cloudflare-token",
    "cloudflare-global": "cloudflare-token",
    "stripe-test": "stripe-key",
    "stripe-webhook": "stripe-webhook-secret",
    "tavily": "tavily-key",
    "perplexity": "perplexity-key",
    "deepseek": "deepseek-key",
    "xai": "xai-key",
    "together": "together-key",
    "llama-api": "llama-api-key",
    "heroku": "heroku-key",
    "groq": "groq-key",
    "postman-collection": "postman-key",
    "supabase": "supabase-token",
    "planetscale": "planetscale-token",
    "sentry-user": "sentry-token",
    "doppler-service": "doppler-token",
    "defined-networking": "defined-networking-key",
    "bedrock-long-term": "bedrock-key",
    "bedrock-short-term": "bedrock-key",
    "instagram": "instagram-token",
    "facebook": "facebook-token",
    "facebook-app": "facebook-app-token",
    "dynatrace": "dynatrace-token",
    "nats-user-seed": "nats-nkey-seed",
    "nats-operator-seed": "nats-nkey-seed",
    "otpauth": "otp-secret",
    "onepassword-secret-key": "onepassword-secret-key",
    "azure-client-secret": "azure-client-secret",
    "azure-identifiable": "azure-identifiable-key",
    "alibaba-key-id": "alibaba-key-id",
    "sonarqube": "sonarqube-token",
    "brevo": "brevo-key",
    "google-refresh": "google-oauth-refresh-token",
    "x-bearer": "x-bearer-token",
    "slack-bot-legacy": "slack-token",
    "slack-workspace": "slack-token",
    "slack-rotating": "slack-token",
    "cloudflare-origin-ca": "cloudflare-origin-ca-key",
    "castai": "castai-key",
    "flyio-short": "flyio-token",
    "azure-data-factory": "azure-data-factory-key",
    "intra42": "intra42-secret",
    "maxmind": "maxmind-license-key",
    "openrouter": "openrouter-key",
    "sourcegraph": "sourcegraph-token",
    "sourcegraph-local": "sourcegraph-token",
    "slack-file-token": "slack-token",
    "braintree": "braintree-token",
    "mercadopago": "mercadopago-token",
    "midtrans": "midtrans-server-key",
    "shippo": "shippo-token",
    "readme": "readme-key",
    "scalingo": "scalingo-token",
    "django": "django-secret-key",
    "openshift": "openshift-token",
    "harness": "harness-token",
    "octopus": "octopus-deploy-key",
    "infracost": "infracost-token",
    "chieftools": "chieftools-token",
    "langsmith": "langsmith-key",
    "pinecone": "pinecone-key",
    "clickhouse": "clickhouse-key",
}
# Formats of letters and digits only, kept out of base64 text by a boundary that a "/" before
# them does not pass: a path glued to them is tested with "=" instead.
BASE64_BOUNDED = {"facebook", "instagram", "square-access", "azure-identifiable"}


def _case(_value: object) -> str:
    """A stable test id: the values are generated at import, and every worker must collect
    the same names (pytest numbers the repeats)."""
    return "case"


def _contexts(kind: str, token: str) -> list[str]:
    glue = "=" if kind in BASE64_BOUNDED else "/"
    return [
        f"{token}\n",
        f'client = Client(api_key="{token}")\n',
        f"const key = '{token}';\n",
        f"service:\n  credentials:\n    value: {token}\n",
        json.dumps({"config": {"upstream": token}}, indent=2) + "\n",
        f"The key {token} was pasted into the ticket, please rotate it.\n",
        f"cat /var/run/keys{glue}{token}\n",
        f"curl 'https://api.example.org/v1/items?page=2&key={token}'\n",
    ]


@pytest.mark.parametrize("kind", sorted(NEW_FORMATS))
def test_each_new_format_is_withheld_wherever_it_is_written(kind: str) -> None:
    for context in range(8):
        token = TOKENS[kind]()
        text = _contexts(kind, token)[context]
        redacted, findings = redact(text)
        assert token not in redacted, text
        assert NEW_FORMATS[kind] in {f.kind for f in findings}, text
        assert f"[REDACTED:{NEW_FORMATS[kind]}]" in redacted


@pytest.mark.parametrize("kind", sorted(NEW_FORMATS))
def test_each_new_format_is_in_the_own_corpus(kind: str) -> None:
    assert kind in TOKENS


def _digits_b64(digits: str) -> str:
    return base64.b64encode(digits.encode()).decode()


@pytest.mark.parametrize(
    "secret",
    [
        f"AKIA{rand(16, BASE32)}",
        f"ABIA{rand(16, BASE32)}",
        f"ACCA{rand(16, BASE32)}",
    ],
    ids=_case,
)
def test_an_aws_secret_key_near_any_kind_of_key_id_is_withheld(secret: str) -> None:
    value = rand(20) + "/" + rand(19)
    value = value[:5] + "9" + value[6:]  # digits and both cases, as generated keys hold
    text = f"[profile ci]\nkey = {secret}\nsigning = {value}\n"
    redacted, _ = redact(text)
    assert secret not in redacted and value not in redacted


def test_an_aws_key_id_with_any_digit_is_withheld() -> None:
    for key_id in (f"AKIA{rand(14, string.ascii_uppercase)}08", f"ASIA0{rand(15, BASE32)}"):
        line = f'    "AccessKeyId" : "{key_id}",\n'
        redacted, findings = redact(line)
        assert key_id not in redacted and findings[0].kind == "aws-access-key-id"


def test_an_alibaba_secret_beside_its_key_id_is_withheld() -> None:
    key_id, key_secret = f"LTAI{rand(12)}", rand(25) + "7aB" + rand(2)
    for text in (
        f"client = AcsClient('{key_id}', '{key_secret}', 'cn-hangzhou')\n",
        f"ALIBABA_CLOUD_ACCESS_KEY_ID={key_id}\nALIBABA_CLOUD_ACCESS_KEY_SECRET={key_secret}\n",
    ):
        redacted, _ = redact(text)
        assert key_id not in redacted and key_secret not in redacted, text


def test_a_totp_seed_is_withheld_in_any_parameter_position() -> None:
    seed = rand(32, BASE32)
    for url in (
        f"otpauth://totp/Acme:ops?issuer=Acme&secret={seed}&digits=6",
        f"otpauth://hotp/Acme?counter=4&SECRET={seed.lower()}",
    ):
        redacted, findings = redact(f'qr = "{url}"\n')
        assert seed not in redacted and seed.lower() not in redacted
        assert findings[0].kind == "otp-secret"
        assert "otpauth://" in redacted  # only the seed goes


@pytest.mark.parametrize(
    ("placeholder", "real"),
    [
        ("ghp_" + "x" * 36, f"ghp_{rand(36)}"),
        ("ghp_" + "0" * 36, f"ghp_{rand(36)}"),
        ("AKIAIOSFODNN7EXAMPLE", f"AKIA{rand(16, BASE32)}"),
        (f"sk-proj-{rand(40)}XXXXXXXX", f"sk-proj-{rand(48)}"),
        ("sk-" + "0123456789abcdef" * 2, f"sk-{rand(32, HEX)}"),
        ("glpat-" + "x" * 20, f"glpat-{rand(20)}"),
        ("dckr_pat_" + "EXAMPLE-" * 4, f"dckr_pat_{rand(32)}"),
        (f"vcp_{rand(49)}EXAMPLE", f"vcp_{rand(56)}"),
        (f"cfut_{rand(36)}tokenexample", f"cfut_{rand(48)}"),
        (f"tvly-dev-{rand(26)}123456", f"tvly-dev-{rand(32)}"),
        (f"pplx-{rand(42)}654321", f"pplx-{rand(48)}"),
        (f"phx_Your{rand(43)}", f"phx_{rand(47)}"),
        ("SUA" + "A" * 55, f"SUA{rand(55, BASE32)}"),
        (f"ntn_{rand(11, string.digits)}Example{rand(28)}", f"ntn_{rand(46)}"),
        (f"nfp_{rand(30)}dummy0", f"nfp_{rand(36)}"),
        (f"hf_{rand(27)}fake{rand(3)}", f"hf_{rand(34)}"),
        ("A3-XXXXXX-XXXXXX-XXXXX-XXXXX-XXXXX-XXXXX", TOKENS["onepassword-secret-key"]()),
    ],
    ids=_case,
)
def test_a_stand_in_written_in_a_format_is_served_and_the_real_one_is_not(
    placeholder: str, real: str
) -> None:
    # Names that are not secret-like: a stand-in under ``TOKEN =`` is the assignments' to judge.
    for template in ('upstream = "{}"\n', "export UPSTREAM={}\n", "see {} in the docs\n"):
        line = template.format(placeholder)
        assert redact(line) == (line, ()), line
        assert real not in redact(template.format(real))[0]


@pytest.mark.parametrize(
    "line",
    [
        "XAI_API_KEY=xai-your-api-key-here\n",
        "TOGETHER_API_KEY=tgp_v1_your_together_api_key_here\n",
        "export DOCKER_TOKEN=dckr_pat_<your token>\n",
    ],
    ids=_case,
)
def test_written_out_stand_ins_are_served(line: str) -> None:
    assert redact(line) == (line, ())


@pytest.mark.parametrize(
    "public",
    [
        f"phc_{rand(43)}",  # PostHog project key: write-only, in every page's JavaScript
        f"pk_live_{rand(99)}",  # Stripe publishable keys: meant for browsers
        f"pk_test_{rand(24)}",
        f"sb_publishable_{rand(31, B64URL)}",  # Supabase's publishable keys
        f"00D{rand(12)}",  # a Salesforce org id alone
        f"3MVG9{rand(80, ALNUM + '._')}",  # a Salesforce connected app's consumer key
        f"UA{rand(54, BASE32)}",  # a NATS user's public key (its seed starts with S)
        f"{rand(15, string.digits)}",  # a Facebook app id alone
    ],
    ids=_case,
)
def test_public_identifiers_are_served(public: str) -> None:
    for template in ('NEXT_PUBLIC_KEY = "{}"\n', "api_key: {}\n", "{}\n"):
        line = template.format(public)
        assert redact(line) == (line, ()), line


def test_the_secret_is_withheld_and_the_public_id_beside_it_is_served() -> None:
    app_id, app_secret = "1" + rand(14, string.digits), rand(32, HEX)
    org = "00D" + rand(12)
    session = f"!AQ{rand(94, ALNUM + '._')}"
    public = f"phc_{rand(43)}"
    private = f"phx_{rand(47)}"
    text = (
        f"fb_app={app_id}|{app_secret}\n"
        f"SF_SESSION={org}{session}\n"
        f'posthog = {{"project": "{public}", "personal": "{private}"}}\n'
    )
    redacted, findings = redact(text)
    assert app_id in redacted and app_secret not in redacted
    assert org in redacted and session[1:] not in redacted
    assert public in redacted and private not in redacted
    assert [f.kind for f in findings] == ["facebook-app-token", "salesforce-session", "posthog-key"]


@pytest.mark.parametrize(
    "line",
    [
        f"scan-disk-{rand(32, HEX)}\n",  # sk- inside a word
        # base64 of words, not of a number: not a Discord bot's user id
        f"{base64.b64encode(b'hello there world ok').decode()}.{rand(6)}.{rand(38)}\n",
        # base64 of "0001:" and bytes: a key id too short for a Jira token
        base64.b64encode(b"0001:" + secrets.token_bytes(28)).decode() + "\n",
        # JFrog's reference prefix over words, not a version and a time
        base64.b64encode(b"reftkn:There are no tokens in this sentence at all ok").decode() + "\n",
        f"phone = {rand(15, string.digits)}|ok\n",  # a number and a short word after a bar
        f"{rand(17, string.digits)}|{rand(32, HEX)}\n",  # too long for an app id
        "SUAVE_SCALE = 3\nSCALAR_SOA_RECORDS = 1\n",  # words that start like NATS seeds
        "ratio = 00D / 4\n",
        f'"data:image/png;base64,{rand(40, ALNUM + "+/")}/EAAB{rand(120)}"\n',  # inside an image
        f"otpauth://totp/Acme?issuer=Acme&secret={'A' * 32}\n",
        # an identifiable key's structure around a typed body
        "key = " + "ab" * 26 + "JQQJ99AB" + "A" * 16 + "A" + rand(7) + "\n",
        # a path list (a source map's) near the letters of a key id: 40 characters, not drawn
        'AKIA ids: see "node_modules/rxjs/src/internal/util/arrRemove.ts", "lib/x.ts"\n',
        # Slack's prefixes around bodies without the team's and user's numbers
        "SLACK_BOT = xoxb-my-bot-name\n",
        f"images/2018-250-xoxo-{rand(8, string.ascii_lowercase)}-1.jpg\n",
        f"see xoxp-{rand(10, string.digits)} in the log\n",
        f"xoxe.xoxp-1-{rand(30, string.ascii_letters)}\n",
        # a version of the same shape as Cloudflare's origin keys, too short to be one
        f"v1.0-{rand(24, HEX)}-{rand(40, HEX)}\n",
    ],
    ids=_case,
)
def test_look_alikes_of_the_new_formats_are_served(line: str) -> None:
    assert redact(line) == (line, ()), line


@pytest.mark.parametrize("kind", ["deepseek", "perplexity", "twilio-api-key", "huggingface"])
def test_a_token_glued_to_a_terminal_colour_code_is_withheld(kind: str) -> None:
    token = TOKENS[kind]()
    for colour in ("\x1b[93m", "[1;31m", "\x1b[0m"):
        line = f">>>{colour}{token}\x1b[0m<<<\n"
        redacted, _ = redact(line)
        assert token not in redacted, line


def test_an_atlassian_data_center_token_is_found_in_a_url_path() -> None:
    token = TOKENS["atlassian-data-center"]()
    text = f"GET https://jira.example.org/rest/api/2/token/{token}\n"
    (span,) = find_secrets(text)
    assert text[span.start : span.end] == token and span.kind == "atlassian-token"


def test_a_discord_bot_token_of_any_user_id_length_is_withheld() -> None:
    for digits in (17, 18, 19, 20):
        user = _digits_b64(str(secrets.randbelow(9) + 1) + rand(digits - 1, string.digits))
        token = f"{user.rstrip('=')}.{rand(6, B64URL)}.{rand(27, B64URL)}"
        redacted, _ = redact(f"bot.run('{token}')\n")
        assert token not in redacted


def test_near_misses_of_the_new_anchors_scan_in_linear_time() -> None:
    near_misses = [
        "MTIz" * 250_000,
        "1|" * 500_000,
        "A" * 1_000_000,
        "00D" * 330_000,
        "JQQJ9" * 200_000,
        "SUA" * 330_000,
        "otpauth://totp/a?" * 60_000,
        "NRAL" * 250_000,
        "sl." * 330_000,
        "EAA" * 330_000,
        "LTAI " + "Ab1" * 330_000,
        "MTIzNDU2Nzg5MDEyMzQ1Njc4OQ." * 40_000,
    ]
    for line in near_misses:
        started = time.perf_counter()
        redacted, _ = redact(line)
        assert time.perf_counter() - started < 10, line[:20]
        assert "\n" not in redacted
