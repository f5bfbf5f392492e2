"""Provider tokens by their published formats: one rule per format, each with the literal anchor
the prefilter looks for before the rule's own pattern runs.

A rule runs only where the prefilter found one of its anchors: anchored at the hit (most rules),
or along the hit's line for the few formats whose anchor sits inside the token (``lead``). Every
quantifier is bounded, so a rule costs a constant per hit and a line of near-misses stays
linear. Distinctive prefixes (``ghp_``, ``glpat-``, ``xoxb-``) match even when glued to a word;
short ones (``SK``, ``AC``, ``key-``) need a boundary on the left. A rule whose
pattern has a ``secret`` group redacts only that group (the value after ``AccountKey=``).

The formats here are the first ones kept; newer ones live by family beside them (``ai``,
``apps``, ``devops``, ``keys``), and :data:`RULES` is all of them.
"""

from __future__ import annotations

from safeport.shared.secret_scan.checks import (
    is_jwt,
    mixed_generated,
    random_enough,
    shannon_bits,
)
from safeport.shared.secret_scan.providers.ai import AI_RULES
from safeport.shared.secret_scan.providers.apps import APP_RULES
from safeport.shared.secret_scan.providers.devops import DEVOPS_RULES
from safeport.shared.secret_scan.providers.keys import KEY_RULES
from safeport.shared.secret_scan.providers.token_rule import B, E, TokenRule, rule

__all__ = ["RULES", "TokenRule"]


def _drawn_40(value: str) -> bool:
    """40 characters drawn from 64 carry about 4.8 bits each, and below 4.0 almost never (none
    in 100,000 draws); a slice of a path list in a source map (``modules/rxjs/src/…``) carries
    less than 4."""
    return shannon_bits(value) >= 4.0


RULES: tuple[TokenRule, ...] = (
    rule(
        "github-token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"gh[pousr]_[A-Za-z0-9]{36,251}"
    ),
    rule("github-token", "github_pat_", r"github_pat_[A-Za-z0-9_]{40,255}"),
    rule(
        "gitlab-token",
        tuple(
            f"gl{p}-"
            for p in [
                *("pat", "dt", "rt", "rtr", "ptt", "cbt", "ft", "soat", "oas", "imt", "agent"),
                *("ffct", "wt"),
            ]
        ),
        # The routable form of a personal access token ends with a dotted suffix
        # (``glpat-<body>.01.<9 characters>``): the dot stays inside the token.
        r"gl(?:pat|dt|rtr?|ptt|cbt|ft|soat|oas|imt|agent|ffct|wt)-[A-Za-z0-9_\-.]{20,300}",
    ),
    # The session cookie of a signed-in browser: as good as the password while it lives.
    rule(
        "gitlab-session",
        "_gitlab_session=",
        r"_gitlab_session=(?P<secret>[a-f0-9]{32})" + E,
    ),
    rule("gitlab-token", "GR1348941", r"GR1348941[A-Za-z0-9_\-]{20,64}"),
    # Slack's tokens number their team, user or bot, then end in a random part: bot tokens two
    # numbers (one in the older form), user and legacy tokens three, after a version digit in
    # workspace tokens (``xoxa-2-…``). A body without those numbers (``xoxb-my-bot-token``,
    # ``xoxp-1234567890``) is a name or an example.
    rule(
        "slack-token",
        tuple(f"xox{c}-" for c in "abposre"),
        r"xox[abposre]-(?:\d{1,2}-)?(?:\d{6,16}-){1,3}[A-Za-z0-9]{8,64}" + E,
    ),
    # Rotating and configuration tokens and their refresh tokens: a version digit, then about
    # 150 characters (base64 of the numbers and the random part).
    rule("slack-token", "xoxe.xox", r"xoxe\.xox[bp]-\d-[A-Za-z0-9]{32,250}" + E),
    rule("slack-token", ("xoxe-", "xoxp-", "xoxb-"), r"xox[epb]-\d-[A-Za-z0-9]{60,250}" + E),
    rule("slack-token", "xapp-", r"xapp-\d-[A-Za-z0-9\-]{20,250}"),
    rule(
        "slack-webhook",
        "hooks.slack.com/",
        r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/]{20,200}",
    ),
    rule(
        "stripe-key",
        ("sk_live_", "sk_test_", "sk_prod_", "rk_live_", "rk_test_", "rk_prod_"),
        r"(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{16,247}",
    ),
    rule("stripe-webhook-secret", "whsec_", r"whsec_[A-Za-z0-9+/]{24,100}"),
    rule(
        "aws-access-key-id",
        ("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
        # Issued ids are base32 (A-Z, 2-7), but ids written by hand or by older tools hold any
        # digit, and rule sets (TruffleHog, CredSweeper) take them all: 16 capitals or digits.
        B + r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}" + E,
        random_enough,
    ),
    # The secret access key has no prefix: 40 base64 characters near an access key id.
    rule(
        "aws-secret-access-key",
        ("AKIA", "ASIA", "ABIA", "ACCA"),
        r"(?<![A-Za-z0-9/+])(?=[A-Za-z0-9/+]{0,39}[0-9/+])(?=[A-Za-z0-9/+]{0,39}[a-z])"
        r"(?=[A-Za-z0-9/+]{0,39}[A-Z])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])",
        _drawn_40,
        lead=True,
        context_lines=3,
    ),
    rule("google-api-key", "AIza", r"AIza[0-9A-Za-z_\-]{35}"),
    rule("google-oauth-secret", "GOCSPX-", r"GOCSPX-[A-Za-z0-9_\-]{24,40}"),
    rule("google-oauth-token", "ya29.", r"ya29\.[0-9A-Za-z_\-]{30,500}"),
    rule("anthropic-key", "sk-ant-", r"sk-ant-[A-Za-z0-9_\-]{32,300}"),
    rule(
        "openai-key",
        "sk-",
        B + r"sk-(?:(?:proj|svcacct|admin|None)-)?[A-Za-z0-9_\-]{20,300}",
        mixed_generated,
    ),
    rule("npm-token", "npm_", r"npm_[A-Za-z0-9]{36}" + E),
    rule("pypi-token", "pypi-AgE", r"pypi-AgE[A-Za-z0-9_\-]{50,300}"),
    rule("sendgrid-key", "SG.", B + r"SG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{16,64}"),
    rule("twilio-key", "SK", B + r"SK[0-9a-fA-F]{32}" + E),
    rule("twilio-account-sid", "AC", B + r"AC[0-9a-f]{32}" + E),
    rule("huggingface-token", "hf_", B + r"hf_[A-Za-z0-9]{30,60}" + E, mixed_generated),
    rule("huggingface-token", "api_org_", r"api_org_[A-Za-z0-9]{30,60}"),
    rule("digitalocean-token", ("doo_v1_", "dop_v1_", "dor_v1_"), r"do[opr]_v1_[a-f0-9]{64}"),
    rule("vault-token", ("hvs.", "hvb.", "hvr."), B + r"hv[sbr]\.[A-Za-z0-9_\-]{24,300}"),
    rule(
        "shopify-token",
        ("shpat_", "shpss_", "shpca_", "shppa_"),
        r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}",
    ),
    rule("databricks-token", "dapi", B + r"dapi[a-f0-9]{32}(?:-\d)?" + E),
    rule("linear-key", ("lin_api_", "lin_oauth_"), r"lin_(?:api|oauth)_[A-Za-z0-9]{40,64}"),
    rule("postman-key", "PMAK-", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    # Collection access tokens.
    rule("postman-key", "PMAT-", r"PMAT-[0-9A-Z]{26}" + E, random_enough),
    rule("grafana-token", "glc_", r"glc_[A-Za-z0-9+/]{32,400}={0,2}"),
    rule("grafana-token", "glsa_", r"glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"),
    rule("grafana-token", "eyJrIjoi", r"eyJrIjoi[A-Za-z0-9+/]{40,400}={0,2}"),
    rule(
        "sentry-token",
        ("sntrys_", "sntryu_"),
        r"sntry(?:s_eyJ[A-Za-z0-9+/=_\-]{50,500}|u_[a-f0-9]{64})",
    ),
    rule("mailgun-key", "key-", B + r"key-[a-f0-9]{32}" + E),
    rule("telegram-bot-token", ":AA", B + r"\d{8,10}:AA[A-Za-z0-9_\-]{33}" + E, lead=True),
    # Service tokens may carry their config's name: ``dp.st.<config>.<body>``.
    rule(
        "doppler-token",
        "dp.",
        B + r"dp\.(?:pt|st|sa|ct|scim|audit)\.(?:[a-z0-9_\-]{1,40}\.)?[A-Za-z0-9]{40,60}",
    ),
    rule("atlassian-token", ("ATATT3", "ATCTT3"), r"AT(?:ATT|CTT)3[A-Za-z0-9_\-=]{100,300}"),
    # Bitbucket Cloud app passwords: ATBB, then 32 letters and digits (the last 8 a checksum).
    rule("bitbucket-app-password", "ATBB", B + r"ATBB[A-Za-z0-9]{32}" + E),
    # Bitbucket Data Center HTTP access tokens: BBDC-, then 44 base64 characters.
    rule("bitbucket-access-token", "BBDC-", B + r"BBDC-[A-Za-z0-9+/]{44}" + E),
    rule(
        "jwt",
        "eyJ",
        B + r"eyJ[A-Za-z0-9_\-]{8,500}\.eyJ[A-Za-z0-9_\-]{4,4000}\.[A-Za-z0-9_\-]{0,1000}",
        is_jwt,
    ),
    rule("azure-storage-key", "AccountKey=", r"AccountKey=(?P<secret>[A-Za-z0-9+/]{80,100}={0,2})"),
    rule(
        "azure-shared-access-key",
        "SharedAccessKey=",
        r"SharedAccessKey=(?P<secret>[A-Za-z0-9+/]{40,100}={0,2})",
    ),
    rule(
        "azure-sas-signature", "sig=", B + r"sig=(?P<secret>[A-Za-z0-9%+/]{40,200}(?:%3D|=){0,2})"
    ),
    rule(
        "azure-client-secret",
        "Q~",
        r"(?<![A-Za-z0-9_~.\-])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~.\-])",
        lead=True,
    ),
    rule("age-secret-key", "AGE-SECRET-KEY-1", r"AGE-SECRET-KEY-1[0-9A-Z]{58}"),
    # Personal and organisation access tokens.
    rule(
        "docker-hub-token", ("dckr_pat_", "dckr_oat_"), r"dckr_(?:pat|oat)_[A-Za-z0-9_\-]{27,100}"
    ),
    rule("rubygems-key", "rubygems_", r"rubygems_[a-f0-9]{48}"),
    rule("nuget-key", "oy2", B + r"oy2[a-z0-9]{43}" + E),
    rule("clojars-token", "CLOJARS_", r"CLOJARS_[a-z0-9]{60}"),
    rule("pulumi-token", "pul-", B + r"pul-[a-f0-9]{40}" + E),
    rule("supabase-token", "sbp_", r"sbp_(?:v0_)?[a-f0-9]{40}" + E),
    # Supabase's secret API keys; ``sb_publishable_`` keys are meant for browsers and left alone.
    rule("supabase-token", "sb_secret_", r"sb_secret_[A-Za-z0-9_\-]{20,80}"),
    rule("planetscale-token", "pscale_", r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_\-.]{32,64}"),
    # User (NRAK), admin (NRAA), REST (NRRA), Insights insert and query (NRII, NRIQ), browser
    # (NRJS, NRBR) and synthetics (NRSP) keys. Browser keys do end up in pages, but they still
    # let anyone post data into the account, and gitleaks and CredSweeper withhold them too.
    rule(
        "new-relic-key",
        tuple(f"NR{p}-" for p in ("AK", "AA", "RA", "II", "IQ", "JS", "BR", "SP")),
        r"NR(?:AK|AA|RA|II|IQ|JS|BR|SP)-[A-Za-z0-9_\-]{19,42}" + E,
        random_enough,
    ),
    # License (ingest) keys: 40 characters ending in NRAL, the first six naming a region
    # (``eu01xx``) or hex like the rest.
    rule(
        "new-relic-key",
        "NRAL",
        r"(?<![A-Za-z0-9])(?=[a-z0-9]{0,35}[0-9])[a-z0-9]{36}NRAL" + E,
        random_enough,
        lead=True,
    ),
    rule(
        "discord-webhook",
        ("discord.com/api/", "discordapp.com/api/"),
        r"discord(?:app)?\.com/api/(?:v\d{1,2}/)?webhooks/\d+/[A-Za-z0-9_\-]{60,100}",
    ),
    rule("square-token", ("sq0atp-", "sq0csp-"), r"sq0(?:atp|csp)-[A-Za-z0-9_\-]{22,60}"),
    rule("groq-key", "gsk_", r"gsk_[A-Za-z0-9]{48,60}"),
    rule("replicate-token", "r8_", B + r"r8_[A-Za-z0-9]{37,40}" + E),
    # Integration tokens: ntn_ and 46 letters and digits (the first eleven digits in most);
    # older ones are secret_ and 43.
    rule("notion-token", "ntn_", r"ntn_[A-Za-z0-9]{40,50}" + E, mixed_generated),
    rule("notion-token", "secret_", B + r"secret_[A-Za-z0-9]{43}" + E, mixed_generated),
    rule("figma-token", "figd_", r"figd_[A-Za-z0-9_\-]{40,100}"),
    rule("contentful-token", "CFPAT-", r"CFPAT-[A-Za-z0-9_\-]{43}"),
    rule("dynatrace-token", "dt0c01.", r"dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}"),
    rule("mapbox-secret-token", "sk.eyJ", r"sk\.eyJ[A-Za-z0-9_\-]{50,500}\.[A-Za-z0-9_\-]{20,100}"),
    rule("buildkite-token", "bkua_", r"bkua_[a-f0-9]{40}"),
    rule("prefect-key", "pnu_", r"pnu_[A-Za-z0-9]{36}"),
    rule(
        "flyio-token",
        ("fm1_", "fm2_", "fm1a_", "fm2a_", "fm1r_", "fm2r_"),
        r"fm[12][ar]?_[A-Za-z0-9+/]{100,1000}={0,2}",
    ),
    # Older AccessKey ids are LTAI and 12 characters, newer ones LTAI and 20.
    rule("alibaba-key-id", "LTAI", B + r"LTAI[A-Za-z0-9]{12,20}" + E),
    # The AccessKey secret has no prefix: 30 letters and digits near an id, as with AWS.
    rule(
        "alibaba-access-key-secret",
        "LTAI",
        r"(?<![A-Za-z0-9/+])[A-Za-z0-9]{30}(?![A-Za-z0-9/+])",
        mixed_generated,
        lead=True,
        context_lines=3,
    ),
    # Platform API keys: HRKU- and 60 characters, or (older) HRKU- and a UUID.
    rule(
        "heroku-key",
        "HRKU-",
        r"HRKU-(?:[A-Za-z0-9_\-]{60,70}|[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12})" + E,
    ),
    rule(
        "terraform-token",
        ".atlasv1.",
        r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=\-]{60,100}",
        lead=True,
    ),
    rule("onepassword-token", "ops_eyJ", r"ops_eyJ[A-Za-z0-9+/=_\-]{200,2000}"),
    *AI_RULES,
    *APP_RULES,
    *DEVOPS_RULES,
    *KEY_RULES,
)
