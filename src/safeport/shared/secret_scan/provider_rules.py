"""Provider tokens by their published formats: one rule per format, each with the literal anchor
the prefilter looks for before the rule's own pattern runs.

A rule runs only where the prefilter found one of its anchors: anchored at the hit (most rules),
or along the hit's line for the few formats whose anchor sits inside the token (``lead``). Every
quantifier is bounded, so a rule costs a constant per hit and a line of near-misses stays
linear. Distinctive prefixes (``ghp_``, ``glpat-``, ``xoxb-``) match even when glued to a word;
short ones (``SK``, ``AC``, ``key-``) need a boundary on the left. A rule whose
pattern has a ``secret`` group redacts only that group (the value after ``AccountKey=``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from safeport.shared.secret_scan.checks import is_jwt, shannon_bits

B = r"(?<![A-Za-z0-9_])"  # a left boundary for short anchors
E = r"(?![A-Za-z0-9])"  # a right boundary for fixed-length bodies


@dataclass(frozen=True)
class TokenRule:
    kind: str
    anchors: tuple[str, ...]  # literals the prefilter finds; the pattern starts at one
    pattern: re.Pattern[str]
    check: Callable[[str], bool] | None = None
    lead: bool = False  # the token starts before its anchor: search the anchor's line
    context_lines: int = 0  # lines around the anchor a lead rule may reach (AWS secret keys)


def _rule(
    kind: str,
    anchors: str | tuple[str, ...],
    pattern: str,
    check: Callable[[str], bool] | None = None,
    *,
    lead: bool = False,
    context_lines: int = 0,
) -> TokenRule:
    literals = (anchors,) if isinstance(anchors, str) else anchors
    return TokenRule(kind, literals, re.compile(pattern), check, lead, context_lines)


def _random_enough(value: str) -> bool:
    return shannon_bits(value) >= 3.0


def _mixed(value: str) -> bool:
    """Generated bodies mix digits, capitals and small letters; words and slugs do not."""
    body = value.split("-", 1)[-1] if value.startswith("sk-") else value
    if shannon_bits(body) < 3.5:
        return False
    digits = sum(c.isdigit() for c in body)
    upper = sum(c.isupper() for c in body)
    lower = sum(c.islower() for c in body)
    if digits and upper and lower:
        return True
    # A generated body lacks digits by chance (one in about 400 of 34 letters or digits), and
    # such a token must still be withheld. Words run together cannot pass for one: their
    # capitals are a few word starts, where a random body's are about half its letters.
    letters = upper + lower
    return not digits and letters >= 20 and 0.3 <= upper / letters <= 0.7


RULES: tuple[TokenRule, ...] = (
    _rule(
        "github-token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"gh[pousr]_[A-Za-z0-9]{36,251}"
    ),
    _rule("github-token", "github_pat_", r"github_pat_[A-Za-z0-9_]{40,255}"),
    _rule(
        "gitlab-token",
        tuple(
            f"gl{p}-"
            for p in ["pat", "dt", "rt", "ptt", "cbt", "ft", "soat", "oas", "imt", "agent", "ffct"]
        ),
        r"gl(?:pat|dt|rt|ptt|cbt|ft|soat|oas|imt|agent|ffct)-[A-Za-z0-9_\-.]{20,300}",
    ),
    _rule("gitlab-token", "GR1348941", r"GR1348941[A-Za-z0-9_\-]{20,64}"),
    _rule(
        "slack-token",
        tuple(f"xox{c}-" for c in "abposer"),
        r"xox[abposer]-(?:\d+-)?[A-Za-z0-9\-]{10,250}",
    ),
    _rule("slack-token", "xoxe.xox", r"xoxe\.xox[bp]-\d-[A-Za-z0-9\-]{20,250}"),
    _rule("slack-token", "xapp-", r"xapp-\d-[A-Za-z0-9\-]{20,250}"),
    _rule(
        "slack-webhook",
        "hooks.slack.com/",
        r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/]{20,200}",
    ),
    _rule(
        "stripe-key",
        ("sk_live_", "sk_test_", "sk_prod_", "rk_live_", "rk_test_", "rk_prod_"),
        r"(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{16,247}",
    ),
    _rule("stripe-webhook-secret", "whsec_", r"whsec_[A-Za-z0-9+/]{24,100}"),
    _rule(
        "aws-access-key-id",
        ("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
        B + r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z2-7]{16}" + E,
    ),
    # The secret access key has no prefix: 40 base64 characters near an access key id.
    _rule(
        "aws-secret-access-key",
        ("AKIA", "ASIA"),
        r"(?<![A-Za-z0-9/+])(?=[A-Za-z0-9/+]{0,39}[0-9/+])(?=[A-Za-z0-9/+]{0,39}[a-z])"
        r"(?=[A-Za-z0-9/+]{0,39}[A-Z])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])",
        _random_enough,
        lead=True,
        context_lines=3,
    ),
    _rule("google-api-key", "AIza", r"AIza[0-9A-Za-z_\-]{35}"),
    _rule("google-oauth-secret", "GOCSPX-", r"GOCSPX-[A-Za-z0-9_\-]{24,40}"),
    _rule("google-oauth-token", "ya29.", r"ya29\.[0-9A-Za-z_\-]{30,500}"),
    _rule("anthropic-key", "sk-ant-", r"sk-ant-[A-Za-z0-9_\-]{32,300}"),
    _rule(
        "openai-key",
        "sk-",
        B + r"sk-(?:(?:proj|svcacct|admin|None)-)?[A-Za-z0-9_\-]{20,300}",
        _mixed,
    ),
    _rule("npm-token", "npm_", r"npm_[A-Za-z0-9]{36}" + E),
    _rule("pypi-token", "pypi-AgE", r"pypi-AgE[A-Za-z0-9_\-]{50,300}"),
    _rule("sendgrid-key", "SG.", B + r"SG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{16,64}"),
    _rule("twilio-key", "SK", B + r"SK[0-9a-fA-F]{32}" + E),
    _rule("twilio-account-sid", "AC", B + r"AC[0-9a-f]{32}" + E),
    _rule("huggingface-token", "hf_", B + r"hf_[A-Za-z0-9]{30,60}" + E, _mixed),
    _rule("huggingface-token", "api_org_", r"api_org_[A-Za-z0-9]{30,60}"),
    _rule("digitalocean-token", ("doo_v1_", "dop_v1_", "dor_v1_"), r"do[opr]_v1_[a-f0-9]{64}"),
    _rule("vault-token", ("hvs.", "hvb.", "hvr."), B + r"hv[sbr]\.[A-Za-z0-9_\-]{24,300}"),
    _rule(
        "shopify-token",
        ("shpat_", "shpss_", "shpca_", "shppa_"),
        r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}",
    ),
    _rule("databricks-token", "dapi", B + r"dapi[a-f0-9]{32}(?:-\d)?" + E),
    _rule("linear-key", ("lin_api_", "lin_oauth_"), r"lin_(?:api|oauth)_[A-Za-z0-9]{40,64}"),
    _rule("postman-key", "PMAK-", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    _rule("grafana-token", "glc_", r"glc_[A-Za-z0-9+/]{32,400}={0,2}"),
    _rule("grafana-token", "glsa_", r"glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"),
    _rule("grafana-token", "eyJrIjoi", r"eyJrIjoi[A-Za-z0-9+/]{40,400}={0,2}"),
    _rule(
        "sentry-token",
        ("sntrys_", "sntryu_"),
        r"sntry(?:s_eyJ[A-Za-z0-9+/=_\-]{50,500}|u_[a-f0-9]{64})",
    ),
    _rule("mailgun-key", "key-", B + r"key-[a-f0-9]{32}" + E),
    _rule("telegram-bot-token", ":AA", B + r"\d{8,10}:AA[A-Za-z0-9_\-]{33}" + E, lead=True),
    _rule("doppler-token", "dp.", B + r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,60}"),
    _rule("atlassian-token", ("ATATT3", "ATCTT3"), r"AT(?:ATT|CTT)3[A-Za-z0-9_\-=]{100,300}"),
    # Bitbucket Cloud app passwords: ATBB, then 32 letters and digits (the last 8 a checksum).
    _rule("bitbucket-app-password", "ATBB", B + r"ATBB[A-Za-z0-9]{32}" + E),
    # Bitbucket Data Center HTTP access tokens: BBDC-, then 44 base64 characters.
    _rule("bitbucket-access-token", "BBDC-", B + r"BBDC-[A-Za-z0-9+/]{44}" + E),
    _rule(
        "jwt",
        "eyJ",
        B + r"eyJ[A-Za-z0-9_\-]{8,500}\.eyJ[A-Za-z0-9_\-]{4,4000}\.[A-Za-z0-9_\-]{0,1000}",
        is_jwt,
    ),
    _rule(
        "azure-storage-key", "AccountKey=", r"AccountKey=(?P<secret>[A-Za-z0-9+/]{80,100}={0,2})"
    ),
    _rule(
        "azure-shared-access-key",
        "SharedAccessKey=",
        r"SharedAccessKey=(?P<secret>[A-Za-z0-9+/]{40,100}={0,2})",
    ),
    _rule(
        "azure-sas-signature", "sig=", B + r"sig=(?P<secret>[A-Za-z0-9%+/]{40,200}(?:%3D|=){0,2})"
    ),
    _rule(
        "azure-client-secret",
        "Q~",
        r"(?<![A-Za-z0-9_~.\-])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~.\-])",
        lead=True,
    ),
    _rule("age-secret-key", "AGE-SECRET-KEY-1", r"AGE-SECRET-KEY-1[0-9A-Z]{58}"),
    _rule("docker-hub-token", "dckr_pat_", r"dckr_pat_[A-Za-z0-9_\-]{27,100}"),
    _rule("rubygems-key", "rubygems_", r"rubygems_[a-f0-9]{48}"),
    _rule("nuget-key", "oy2", B + r"oy2[a-z0-9]{43}" + E),
    _rule("clojars-token", "CLOJARS_", r"CLOJARS_[a-z0-9]{60}"),
    _rule("pulumi-token", "pul-", B + r"pul-[a-f0-9]{40}" + E),
    _rule("supabase-token", "sbp_", r"sbp_[a-f0-9]{40}"),
    _rule("planetscale-token", "pscale_", r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_\-.]{32,64}"),
    _rule("new-relic-key", ("NRAK-", "NRII-", "NRJS-"), r"NR(?:AK|II|JS)-[A-Za-z0-9]{19,42}"),
    _rule(
        "discord-webhook",
        ("discord.com/api/webhooks/", "discordapp.com/api/webhooks/"),
        r"discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]{60,100}",
    ),
    _rule("square-token", ("sq0atp-", "sq0csp-"), r"sq0(?:atp|csp)-[A-Za-z0-9_\-]{22,60}"),
    _rule("groq-key", "gsk_", r"gsk_[A-Za-z0-9]{48,60}"),
    _rule("replicate-token", "r8_", B + r"r8_[A-Za-z0-9]{37}" + E),
    _rule("notion-token", "ntn_", r"ntn_[0-9]{11}[A-Za-z0-9]{35}"),
    _rule("figma-token", "figd_", r"figd_[A-Za-z0-9_\-]{40,100}"),
    _rule("contentful-token", "CFPAT-", r"CFPAT-[A-Za-z0-9_\-]{43}"),
    _rule("dynatrace-token", "dt0c01.", r"dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}"),
    _rule(
        "mapbox-secret-token", "sk.eyJ", r"sk\.eyJ[A-Za-z0-9_\-]{50,500}\.[A-Za-z0-9_\-]{20,100}"
    ),
    _rule("buildkite-token", "bkua_", r"bkua_[a-f0-9]{40}"),
    _rule("prefect-key", "pnu_", r"pnu_[A-Za-z0-9]{36}"),
    _rule(
        "flyio-token",
        ("fm1_", "fm2_", "fm1a_", "fm2a_", "fm1r_", "fm2r_"),
        r"fm[12][ar]?_[A-Za-z0-9+/]{100,1000}={0,2}",
    ),
    _rule("alibaba-key-id", "LTAI", B + r"LTAI[A-Za-z0-9]{20}" + E),
    _rule("heroku-key", "HRKU-", r"HRKU-[A-Za-z0-9_\-]{60,70}"),
    _rule(
        "terraform-token",
        ".atlasv1.",
        r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=\-]{60,100}",
        lead=True,
    ),
    _rule("onepassword-token", "ops_eyJ", r"ops_eyJ[A-Za-z0-9+/=_\-]{200,2000}"),
)
