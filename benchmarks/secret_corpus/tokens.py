"""Provider tokens with fresh random bodies, one generator per published format."""

from __future__ import annotations

import base64
import json
import secrets
import string
from collections.abc import Callable

ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64URL = ALNUM + "-_"


def rand(n: int, alphabet: str = ALNUM) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(n))


def _slack_bot() -> str:
    return f"xoxb-{rand(12, string.digits)}-{rand(13, string.digits)}-{rand(24)}"


def _slack_user() -> str:
    numbers = "-".join(rand(n, string.digits) for n in (12, 12, 13))
    return f"xoxp-{numbers}-{rand(32, HEX)}"


def _slack_app() -> str:
    app = rand(10, string.ascii_uppercase + string.digits)
    return f"xapp-1-A{app}-{rand(13, string.digits)}-{rand(64, HEX)}"


def _slack_webhook() -> str:
    team, bot = rand(8, string.ascii_uppercase), rand(8, string.ascii_uppercase)
    return f"https://hooks.slack.com/services/T{team}/B{bot}/{rand(24)}"


def _jwt() -> str:
    def part(obj: object) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    header = part({"alg": "HS256", "typ": "JWT"})
    body = part({"sub": rand(12), "iat": secrets.randbelow(2**31)})
    return f"{header}.{body}.{rand(43, B64URL)}"


def _azure() -> str:
    key = base64.b64encode(secrets.token_bytes(64)).decode()
    return f"DefaultEndpointsProtocol=https;AccountName={rand(10).lower()};AccountKey={key}"


BASE32 = string.ascii_uppercase + "234567"
UPPER_ALNUM = string.ascii_uppercase + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits


def _digits_b64(digits: int) -> str:
    number = str(secrets.randbelow(9) + 1) + rand(digits - 1, string.digits)
    return base64.b64encode(number.encode()).decode()


def _discord_bot() -> str:
    user = _digits_b64(18).rstrip("=").replace("+", "-").replace("/", "_")
    return f"{user}.{rand(6, B64URL)}.{rand(38, B64URL)}"


def _atlassian_data_center() -> str:
    key_id = rand(12, string.digits).encode()
    return base64.b64encode(key_id + b":" + secrets.token_bytes(20)).decode()


def _jfrog_reference() -> str:
    expiry = rand(10, string.digits)
    raw = f"reftkn:01:{expiry}:{rand(27)}".encode()
    return base64.b64encode(raw).decode().rstrip("=")


def _nkey_seed(kind: str) -> str:
    return f"S{kind}A{rand(55, BASE32)}"


def _otpauth() -> str:
    # Only the seed is withheld: the label before it stays short, so half the link holds some,
    # and the seed ends the link, as the tests that look for a token's tail expect.
    return f"otpauth://totp/A?secret={rand(32, BASE32)}"


def _onepassword_secret_key() -> str:
    groups = [rand(n, UPPER_ALNUM) for n in (6, 6, 5, 5, 5, 5)]
    return "A3-" + "-".join(groups)


def _azure_identifiable() -> str:
    checksum = rand(4)
    return f"{rand(52)}JQQJ99{rand(1)}{rand(1, 'ABCDEFGHIJKL')}{rand(16)}A{rand(3)}{checksum}"


def _salesforce_session() -> str:
    org = "00D" + rand(12)
    return f"{org}!AQ{rand(94, ALNUM + '._')}"


def _facebook_app() -> str:
    return f"{secrets.randbelow(9) + 1}{rand(14, string.digits)}|{rand(32, HEX)}"


def _dropbox_long_lived() -> str:
    return f"{rand(11)}AAAAAAAAAA{rand(43, B64URL)}"


# kind -> generator of one token in that format
TOKENS: dict[str, Callable[[], str]] = {
    "github-classic": lambda: f"ghp_{rand(36)}",
    "github-oauth": lambda: f"gho_{rand(36)}",
    "github-user-to-server": lambda: f"ghu_{rand(36)}",
    "github-server-to-server": lambda: f"ghs_{rand(36)}",
    "github-refresh": lambda: f"ghr_{rand(36)}",
    "github-fine-grained": lambda: f"github_pat_{rand(22)}_{rand(59)}",
    "gitlab": lambda: f"glpat-{rand(20, B64URL)}",
    "slack-bot": _slack_bot,
    "slack-user": _slack_user,
    "slack-app": _slack_app,
    "slack-webhook": _slack_webhook,
    "stripe-live": lambda: f"sk_live_{rand(24)}",
    "stripe-restricted": lambda: f"rk_live_{rand(24)}",
    "aws-access-key-id": lambda: f"AKIA{rand(16, string.ascii_uppercase + '234567')}",
    "aws-session-key-id": lambda: f"ASIA{rand(16, string.ascii_uppercase + '234567')}",
    "google-api-key": lambda: f"AIza{rand(35, B64URL)}",
    "openai-legacy": lambda: f"sk-{rand(20)}T3BlbkFJ{rand(20)}",
    "openai-project": lambda: f"sk-proj-{rand(74, B64URL)}T3BlbkFJ{rand(74, B64URL)}",
    "anthropic": lambda: f"sk-ant-api03-{rand(93, B64URL)}AA",
    "npm": lambda: f"npm_{rand(36)}",
    "pypi": lambda: f"pypi-AgEIcHlwaS5vcmc{rand(70, B64URL)}",
    "sendgrid": lambda: f"SG.{rand(22, B64URL)}.{rand(43, B64URL)}",
    "twilio-api-key": lambda: f"SK{rand(32, HEX)}",
    "twilio-account-sid": lambda: f"AC{rand(32, HEX)}",
    "huggingface": lambda: f"hf_{rand(34)}",
    "digitalocean": lambda: f"dop_v1_{rand(64, HEX)}",
    "vault-service": lambda: f"hvs.{rand(90, B64URL)}",
    "vault-batch": lambda: f"hvb.{rand(120, B64URL)}",
    "shopify-access": lambda: f"shpat_{rand(32, HEX)}",
    "shopify-shared-secret": lambda: f"shpss_{rand(32, HEX)}",
    "databricks": lambda: f"dapi{rand(32, HEX)}",
    "linear": lambda: f"lin_api_{rand(40)}",
    "postman": lambda: f"PMAK-{rand(24, HEX)}-{rand(34, HEX)}",
    "grafana-cloud": lambda: f"glc_{rand(80, ALNUM + '+/')}",
    "grafana-service-account": lambda: f"glsa_{rand(32)}_{rand(8, HEX)}",
    "sentry": lambda: f"sntrys_eyJpYXQiOjE{rand(120, ALNUM)}",
    "mailgun": lambda: f"key-{rand(32, HEX)}",
    "telegram": lambda: f"{rand(10, string.digits)}:AA{rand(33, B64URL)}",
    "doppler": lambda: f"dp.pt.{rand(43)}",
    "atlassian": lambda: f"ATATT3xFfGF0{rand(180, B64URL)}",
    "bitbucket-app-password": lambda: f"ATBB{rand(24)}{rand(8, HEX.upper())}",
    "bitbucket-access-token": lambda: f"BBDC-{rand(44, ALNUM + '+/')}",
    "jwt": _jwt,
    "azure-storage": _azure,
    "gitlab-routable": lambda: f"glpat-{rand(27, B64URL)}.01.{rand(9, LOWER_ALNUM)}",
    "gitlab-runner": lambda: f"glrt-{rand(20, B64URL)}",
    "gitlab-ci-job": lambda: f"glcbt-{rand(5, string.digits)}_{rand(20, B64URL)}",
    "gitlab-oauth-secret": lambda: f"gloas-{rand(64, HEX)}",
    "gitlab-runner-registration": lambda: f"GR1348941{rand(20, B64URL)}",
    "gitlab-workspace": lambda: f"glwt-{rand(30)}",
    "docker-hub-org": lambda: f"dckr_oat_{rand(32, B64URL)}",
    "docker-swarm-token": lambda: f"SWMTKN-1-{rand(50, LOWER_ALNUM)}-{rand(25, LOWER_ALNUM)}",
    "docker-swarm-key": lambda: f"SWMKEY-1-{rand(43, ALNUM + '+/')}",
    "discord-bot": _discord_bot,
    "discord-webhook": lambda: (
        f"https://discord.com/api/v10/webhooks/{rand(18, string.digits)}/{rand(68, B64URL)}"
    ),
    "notion": lambda: f"ntn_{rand(11, string.digits)}{rand(35)}",
    "notion-legacy": lambda: f"secret_{rand(43)}",
    "vercel": lambda: f"vcp_{rand(56)}",
    "vercel-integration": lambda: f"vci_{rand(56)}",
    "netlify": lambda: f"nfp_{rand(36)}",
    "square-access": lambda: f"EAAA{rand(60, B64URL)}",
    "square-oauth-secret": lambda: f"sq0csp-{rand(43, B64URL)}",
    "dropbox-short-lived": lambda: f"sl.u.{rand(140, B64URL)}",
    "dropbox-long-lived": _dropbox_long_lived,
    "jfrog-api-key": lambda: f"AKCp{rand(69)}",
    "jfrog-reference": _jfrog_reference,
    "atlassian-api": lambda: f"ATATT3xFfGF0{rand(180, B64URL)}",
    "atlassian-data-center": _atlassian_data_center,
    "new-relic-user": lambda: f"NRAK-{rand(27, UPPER_ALNUM)}",
    "new-relic-browser": lambda: f"NRJS-{rand(19, HEX)}",
    "new-relic-insights": lambda: f"NRII-{rand(32, B64URL)}",
    "new-relic-license": lambda: f"{rand(36, HEX)}NRAL",
    "salesforce-session": _salesforce_session,
    "posthog-personal": lambda: f"phx_{rand(47)}",
    "posthog-project-secret": lambda: f"phs_{rand(46)}",
    "cloudflare-account": lambda: f"cfat_{rand(48)}",
    "cloudflare-user": lambda: f"cfut_{rand(48)}",
    "cloudflare-global": lambda: f"cfk_{rand(48)}",
    "stripe-test": lambda: f"sk_test_{rand(99)}",
    "stripe-webhook": lambda: f"whsec_{rand(32)}",
    "tavily": lambda: f"tvly-dev-{rand(32)}",
    "perplexity": lambda: f"pplx-{rand(48)}",
    "deepseek": lambda: f"sk-{rand(32, HEX)}",
    "xai": lambda: f"xai-{rand(80)}",
    "together": lambda: f"tgp_v1_{rand(43, B64URL)}",
    "llama-api": lambda: f"llx-{rand(48, B64URL)}",
    "heroku": lambda: f"HRKU-AA{rand(58, B64URL)}",
    "groq": lambda: f"gsk_{rand(52)}",
    "postman-collection": lambda: f"PMAT-{rand(26, UPPER_ALNUM)}",
    "supabase": lambda: f"sbp_v0_{rand(40, HEX)}",
    "planetscale": lambda: f"pscale_tkn_{rand(43, B64URL)}",
    "sentry-user": lambda: f"sntryu_{rand(64, HEX)}",
    "doppler-service": lambda: f"dp.st.prd.{rand(43)}",
    "defined-networking": lambda: f"dnkey-{rand(26, UPPER_ALNUM)}-{rand(52, UPPER_ALNUM)}",
    "bedrock-long-term": lambda: f"ABSK{rand(132, ALNUM + '+/')}",
    "bedrock-short-term": lambda: f"bedrock-api-key-{rand(300, ALNUM + '+/')}",
    "instagram": lambda: f"IGQV{rand(180, B64URL)}",
    "facebook": lambda: f"EAA{rand(1, 'BGI')}{rand(160)}",
    "facebook-app": _facebook_app,
    "dynatrace": lambda: f"dt0c01.{rand(24, UPPER_ALNUM)}.{rand(64, UPPER_ALNUM)}",
    "nats-user-seed": lambda: _nkey_seed("U"),
    "nats-operator-seed": lambda: _nkey_seed("O"),
    "otpauth": _otpauth,
    "onepassword-secret-key": _onepassword_secret_key,
    "azure-client-secret": lambda: f"{rand(3)}8Q~{rand(34, ALNUM + '_~.-')}",
    "azure-identifiable": _azure_identifiable,
    "alibaba-key-id": lambda: f"LTAI{rand(20)}",
    "sonarqube": lambda: f"squ_{rand(40, HEX)}",
    "brevo": lambda: f"xkeysib-{rand(64, HEX)}-{rand(16)}",
    "google-refresh": lambda: f"1//0{rand(100, B64URL)}",
    "x-bearer": lambda: "A" * 22 + f"{rand(12)}%2B{rand(20)}%3D{rand(50)}",
    "slack-bot-legacy": lambda: f"xoxb-{rand(12, string.digits)}-{rand(20)}",
    "slack-workspace": lambda: (
        f"xoxa-2-{rand(9, string.digits)}-{rand(11, string.digits)}-{rand(13, string.digits)}-"
        f"{rand(18, HEX)}"
    ),
    "slack-rotating": lambda: f"xoxp-1-{rand(150, ALNUM)}",
    "cloudflare-origin-ca": lambda: f"v1.0-{rand(24, HEX)}-{rand(146, HEX)}",
    "castai": lambda: f"castai_v1_{rand(64, HEX)}_{rand(8, HEX)}",
    "flyio-short": lambda: f"fo1_{rand(43, B64URL)}",
    "azure-data-factory": lambda: (
        f"IR@{rand(8, HEX)}-{rand(4, HEX)}-{rand(4, HEX)}-{rand(4, HEX)}-{rand(12, HEX)}"
        f"@adf-{rand(6, string.ascii_lowercase)}@we@{rand(43, ALNUM + '+/')}="
    ),
    "intra42": lambda: f"s-s4t2ud-{rand(64, HEX)}",
    "maxmind": lambda: f"{rand(6)}_{rand(29)}_mmk",
    "openrouter": lambda: f"sk-or-v1-{rand(64, HEX)}",
    "sourcegraph": lambda: f"sgp_{rand(16, HEX)}_{rand(40, HEX)}",
    "sourcegraph-local": lambda: f"sgp_local_{rand(40, HEX)}",
    "slack-file-token": lambda: (
        "xoxe-" + "-".join(rand(13, string.digits) for _ in range(3)) + f"-{rand(32, HEX)}"
    ),
    "braintree": lambda: f"access_token$production${rand(16, LOWER_ALNUM)}${rand(32, HEX)}",
    "mercadopago": lambda: (
        f"APP_USR-{rand(16, string.digits)}-{rand(6, string.digits)}-{rand(32, HEX)}-"
        f"{rand(9, string.digits)}"
    ),
    "midtrans": lambda: f"Mid-server-{rand(24, B64URL)}",
    "shippo": lambda: f"shippo_live_{rand(40, HEX)}",
    "readme": lambda: f"rdme_{rand(70, LOWER_ALNUM)}",
    "scalingo": lambda: f"tk-us-{rand(48, B64URL)}",
    "django": lambda: f"django-insecure-{rand(50, ALNUM + '!@#$%^&*(-_=+)')}",
    "openshift": lambda: f"sha256~{rand(43, B64URL)}",
    "harness": lambda: f"pat.{rand(22, B64URL)}.{rand(24)}.{rand(20)}",
    "octopus": lambda: f"API-{rand(26, UPPER_ALNUM)}",
    "infracost": lambda: f"ico-{rand(32)}",
    "chieftools": lambda: f"ctp_{rand(36)}",
    "langsmith": lambda: f"lsv2_pt_{rand(32, HEX)}_{rand(10, HEX)}",
    "pinecone": lambda: f"pcsk_{rand(6)}_{rand(64)}",
    "clickhouse": lambda: f"4b1d{rand(38)}",
}

# A random body is now and then what a person types by hand: low in entropy for its format, or
# holding a typed run or an example word, which the detector serves as a stand-in (about one
# draw in 30,000). Such a draw is drawn again, so that every test and every benchmark sample
# asks about the context a token is written in, never about the luck of its body.
_REDRAWS = 64


def _drawn_again(draw: Callable[[], str]) -> Callable[[], str]:
    from safeport.shared.secret_scan import find_secrets  # the corpus is also read without it

    def again() -> str:
        token = draw()
        for _ in range(_REDRAWS):
            if find_secrets(f"{token}\n"):
                return token
            token = draw()
        return token

    return again


TOKENS = {kind: _drawn_again(draw) for kind, draw in TOKENS.items()}
