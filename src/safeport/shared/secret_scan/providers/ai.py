"""Model, search and data providers' API keys, by the formats their consoles issue.

Most carry a prefix of their own and a body of fixed length, so the prefix and a right boundary
are the whole test. DeepSeek's and OpenRouter's keys share ``sk-`` with OpenAI's but hold
only lowercase hex, which OpenAI's rule (mixed case required) leaves alone.
"""

from __future__ import annotations

from safeport.shared.secret_scan.checks import mixed_generated, random_enough
from safeport.shared.secret_scan.providers.token_rule import B, E, TokenRule, rule


def _hex_mix(value: str) -> bool:
    """32 hex digits drawn at random hold both letters and digits (all-digit in one draw of
    about 1,800, all-letter almost never)."""
    body = value[3:]
    return any(c.isdigit() for c in body) and any(c.isalpha() for c in body)


AI_RULES: tuple[TokenRule, ...] = (
    rule("tavily-key", "tvly-", r"tvly-(?:dev-|prod-)?[A-Za-z0-9]{32}" + E, random_enough),
    rule("perplexity-key", "pplx-", B + r"pplx-[A-Za-z0-9]{48}" + E, mixed_generated),
    rule("deepseek-key", "sk-", B + r"sk-[a-f0-9]{32}" + E, _hex_mix),
    # OpenRouter's keys: ``sk-or-v1-`` and 64 hex digits (OpenAI's rule wants mixed case).
    rule("openrouter-key", "sk-or-v1-", B + r"sk-or-v1-[a-f0-9]{64}" + E, random_enough),
    rule("xai-key", "xai-", B + r"xai-[A-Za-z0-9]{70,90}" + E, mixed_generated),
    rule("together-key", "tgp_v1_", r"tgp_v1_[A-Za-z0-9_\-]{43}" + E, random_enough),
    # LangSmith's personal tokens and service keys; Pinecone's API keys; ClickHouse Cloud's
    # API secrets (``4b1d`` and 38 letters and digits of both cases).
    rule(
        "langsmith-key",
        ("lsv2_pt_", "lsv2_sk_"),
        r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}" + E,
        random_enough,
    ),
    rule(
        "pinecone-key",
        "pcsk_",
        B + r"pcsk_[A-Za-z0-9]{4,10}_[A-Za-z0-9]{40,90}" + E,
        mixed_generated,
    ),
    rule("clickhouse-key", "4b1d", B + r"4b1d[A-Za-z0-9]{38}" + E, mixed_generated),
    rule("llama-api-key", "llx-", B + r"llx-[A-Za-z0-9_\-]{48}" + E, random_enough),
    # Amazon Bedrock API keys: long-term ones are ABSK and base64; short-term ones carry a
    # presigned request, base64 after ``bedrock-api-key-``.
    rule("bedrock-key", "ABSK", B + r"ABSK[A-Za-z0-9+/]{100,300}={0,2}", random_enough),
    rule(
        "bedrock-key",
        "bedrock-api-key-",
        r"bedrock-api-key-[A-Za-z0-9+/_\-]{20,4000}={0,2}",
        random_enough,
    ),
)
