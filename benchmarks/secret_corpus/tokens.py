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
}
