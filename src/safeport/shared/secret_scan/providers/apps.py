"""Tokens of consumer platforms and SaaS products: chat bots, social graphs, payments, CRM,
storage, analytics, hosting, licences.

Two formats here start with base64 of decimal digits (a Discord bot token's user id, a Jira or
Confluence personal access token's key id): three digits encode to four characters of a small
set (``MTIz`` is "123"), which makes the anchors. A Facebook app token is ``<app id>|<secret>``:
its anchor is a digit and the bar, and only the secret is withheld, the app id being public.

Public identifiers that travel beside these secrets are left alone on purpose: PostHog's
``phc_`` project keys (write-only ingestion keys its docs put in every page's JavaScript),
Stripe's ``pk_live_``/``pk_test_`` publishable keys, Salesforce org ids (``00D…`` alone) and
connected-app consumer keys (``3MVG…``), Supabase's ``sb_publishable_`` keys. Withholding them
would hide configuration a reader needs and protect nothing.
"""

from __future__ import annotations

import base64
import re

from safeport.shared.secret_scan.checks import (
    decoded_base64,
    mixed_generated,
    random_enough,
    shannon_bits,
)
from safeport.shared.secret_scan.providers.token_rule import B, E, TokenRule, rule

# Boundaries for tokens of letters and digits only, which also keep them out of base64 text
# (an image in a data URI holds any short prefix by chance).
_B64_LEFT = r"(?<![A-Za-z0-9_+/])"
_B64_RIGHT = r"(?![A-Za-z0-9+/])"
# Base64 of any three decimal digits: the first four characters of a base64'd number.
DIGIT_TRIPLES = tuple(base64.b64encode(f"{n:03d}".encode()).decode() for n in range(1000))
_DIGITS = re.compile(rb"[0-9]{12}:")


def _discord_user_id(token: str) -> bool:
    """A bot token's first part is base64 of the bot's user id: a snowflake of 17 to 20
    digits."""
    decoded = decoded_base64(token.split(".", 1)[0])
    return decoded is not None and 17 <= len(decoded) <= 20 and decoded.isdigit()


def _atlassian_pat(token: str) -> bool:
    """Jira and Confluence Data Center tokens: base64 of a 12-digit key id, a colon and 20
    random bytes."""
    decoded = decoded_base64(token)
    return decoded is not None and len(decoded) == 33 and _DIGITS.match(decoded) is not None


def _drawn_secret(value: str) -> bool:
    """An app secret is 32 hex digits, an app token's signature 27 base64url characters: both
    hold letters and digits and are varied."""
    return (
        random_enough(value) and any(c.isdigit() for c in value) and any(c.isalpha() for c in value)
    )


def _x_bearer(token: str) -> bool:
    """After its run of A's an app-only bearer token is drawn and URL-encoded."""
    body = token.lstrip("A")
    return shannon_bits(body) >= 3.5 and any(c.isdigit() or c == "%" for c in body)


def _dropbox_long_lived(token: str) -> bool:
    """Eleven characters, ten A's, 43 more: the parts around the A's must look drawn."""
    body = token[:11] + token[21:]
    return random_enough(body) and any(c.isdigit() for c in body)


APP_RULES: tuple[TokenRule, ...] = (
    rule(
        "discord-bot-token",
        DIGIT_TRIPLES,
        r"(?<![A-Za-z0-9_\-.])[MNO][A-Za-z0-9_\-]{22,27}\.[A-Za-z0-9_\-]{6}\."
        r"[A-Za-z0-9_\-]{27,38}(?![A-Za-z0-9_\-])",
        _discord_user_id,
    ),
    rule(
        "atlassian-token",
        DIGIT_TRIPLES,
        r"(?<![A-Za-z0-9+])[MNO][A-Za-z0-9+/]{43}(?![A-Za-z0-9+])",
        _atlassian_pat,
    ),
    # Graph API user and page tokens: EAA, then 90 and more letters and digits.
    rule(
        "facebook-token", "EAA", _B64_LEFT + r"EAA[A-Za-z0-9]{90,500}" + _B64_RIGHT, mixed_generated
    ),
    rule(
        "facebook-app-token",
        tuple(f"{d}|" for d in "0123456789"),
        r"(?:(?<=(?<![0-9])[0-9]{14})|(?<=(?<![0-9])[0-9]{15}))[0-9]\|"
        r"(?P<secret>[A-Za-z0-9_\-]{27,40})(?![A-Za-z0-9_\-])",
        _drawn_secret,
    ),
    rule(
        "instagram-token",
        ("IGQV", "IGAA"),
        _B64_LEFT + r"IG(?:QV|AA)[A-Za-z0-9_\-]{100,400}" + _B64_RIGHT,
    ),
    # Square's production and sandbox access tokens (the older sq0atp- ones are in RULES).
    rule(
        "square-token", "EAAA", _B64_LEFT + r"EAAA[A-Za-z0-9_\-]{60}" + _B64_RIGHT, mixed_generated
    ),
    # A session id is the org id, "!" and the session's own secret: the part after "!" is
    # withheld, the org id (an identifier) is left.
    rule(
        "salesforce-session",
        "00D",
        B + r"00D[A-Za-z0-9]{12}(?:[A-Za-z0-9]{3})?!(?P<secret>[A-Za-z0-9._]{80,250})",
    ),
    rule("dropbox-token", "sl.", B + r"sl\.(?:u\.)?[A-Za-z0-9_\-=]{130,1500}", random_enough),
    rule(
        "dropbox-token",
        "AAAAAAAAAA",
        r"(?<![A-Za-z0-9_\-])[A-Za-z0-9_\-]{11}AAAAAAAAAA[A-Za-z0-9_\-]{43}(?![A-Za-z0-9_\-])",
        _dropbox_long_lived,
        lead=True,
        runs=True,
    ),
    # X (Twitter) app-only bearer tokens: a run of A's, then the URL-encoded token.
    rule(
        "x-bearer-token",
        "A" * 20,
        r"(?<![A-Za-z0-9%])A{20,24}[A-Za-z0-9%]{60,200}(?![A-Za-z0-9%])",
        _x_bearer,
        runs=True,
    ),
    # Personal API keys (phx_), project secret keys (phs_), OAuth access and refresh tokens.
    rule(
        "posthog-key",
        ("phx_", "phs_", "pha_", "phr_"),
        B + r"ph[xsar]_[A-Za-z0-9_]{36,80}" + E,
        mixed_generated,
    ),
    rule(
        "cloudflare-token", ("cfat_", "cfut_", "cfk_"), B + r"cf(?:at|ut|k)_[A-Za-z0-9]{40,60}" + E
    ),
    # Personal, integration, app access, app refresh and API key tokens.
    rule(
        "vercel-token",
        tuple(f"vc{p}_" for p in "pciark"),
        B + r"vc[pciark]_[A-Za-z0-9]{24,70}" + E,
        mixed_generated,
    ),
    rule(
        "netlify-token",
        tuple(f"nf{p}_" for p in "pcou"),
        B + r"nf[pcou]_[A-Za-z0-9]{36,48}" + E,
        mixed_generated,
    ),
    rule("brevo-key", ("xkeysib-", "xsmtpsib-"), r"x(?:key|smtp)sib-[a-f0-9]{64}-[A-Za-z0-9]{16}"),
    rule("google-oauth-refresh-token", "1//0", B + r"1//0[A-Za-z0-9_\-]{40,500}", mixed_generated),
    # Payments: Braintree's access token, Mercado Pago's access tokens, Midtrans' server key,
    # Shippo's API tokens (their public and client keys are left alone, as Stripe's are).
    rule(
        "braintree-token",
        "access_token$",
        r"access_token\$(?:production|sandbox)\$[0-9a-z]{16}\$[0-9a-f]{32}" + E,
        random_enough,
    ),
    rule(
        "mercadopago-token",
        ("APP_USR-", "TEST-"),
        B + r"(?:APP_USR|TEST)-[0-9]{15,16}-[0-9]{6}-[0-9a-f]{32}-[0-9]{6,12}" + E,
        random_enough,
    ),
    rule(
        "midtrans-server-key",
        ("Mid-server-",),
        B + r"(?:SB-)?Mid-server-[A-Za-z0-9_\-]{24,32}" + E,
        mixed_generated,
    ),
    rule("shippo-token", "shippo_", r"shippo_(?:live|test)_[a-fA-F0-9]{40}" + E, random_enough),
    rule("readme-key", "rdme_", B + r"rdme_[a-z0-9]{70}" + E, random_enough),
    rule("scalingo-token", "tk-us-", B + r"tk-us-[A-Za-z0-9_\-]{48}" + E, mixed_generated),
    # An OAuth application's secret at 42's intranet (``s-s4t2ud-``, ``s-s4t2af-``).
    rule("intra42-secret", "s-s4t2", B + r"s-s4t2(?:ud|af)-[a-f0-9]{64}" + E, random_enough),
    # A MaxMind license key: 6 characters, 29, then ``_mmk``; the anchor ends the key.
    rule(
        "maxmind-license-key",
        "_mmk",
        B + r"[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk" + E,
        mixed_generated,
        lead=True,
    ),
)
