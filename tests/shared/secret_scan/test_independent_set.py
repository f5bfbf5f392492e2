"""An independent labelled set, written apart from every corpus the detector was tuned on: about
two hundred snippets holding one secret each, as people really commit and paste them, and about
two hundred that hold none but look close. Values are drawn fresh on every run.

A positive passes when no 12 characters in a row of its secret survive :func:`redact`; a
negative when :func:`redact` returns it unchanged. Cases the detector does not yet handle are
``xfail(strict=True)`` under the class they belong to, so fixing one fails its mark until the
mark is removed.
"""

from __future__ import annotations

import pytest
from _pytest.mark.structures import ParameterSet

from safeport.shared.secret_scan import redact
from tests.shared.secret_scan import independent_contextual as contextual
from tests.shared.secret_scan import independent_more as more
from tests.shared.secret_scan import independent_negatives as negatives
from tests.shared.secret_scan import independent_positives as positives
from tests.shared.secret_scan.independent_values import fill, fill_any, survivors

POSITIVE_GROUPS = {
    "providers": positives.PROVIDERS,
    "keys": positives.KEYS,
    "uris": positives.URIS,
    "configs": contextual.CONFIGS,
    "code": contextual.CODE,
    "commands": contextual.COMMANDS,
    "prose": contextual.PROSE,
    "sql": contextual.SQL,
    "traits": contextual.TRAITS,
    "encoded": contextual.ENCODED,
    "more-providers": more.MORE_PROVIDERS,
    "defaults": more.DEFAULTS,
    "tool-files": more.TOOL_FILES,
    "languages": more.LANGUAGES,
}
NEGATIVE_GROUPS = {
    "placeholders": negatives.PLACEHOLDERS,
    "lookups": negatives.LOOKUPS,
    "code-about-secrets": negatives.CODE_ABOUT_SECRETS,
    "look-alike-values": negatives.LOOK_ALIKE_VALUES,
    "blobs": negatives.BLOBS,
    "fixtures": negatives.FIXTURES,
    "elsewhere": negatives.ELSEWHERE,
}

_WORDS = "passphrase of words joined by hyphens"
_LOW_ENTROPY = "short memorable password below the entropy floor"
KNOWN_GAPS: dict[str, str] = {
    "traits-hf-few-capitals": "letters-only provider token with few capitals",
    "traits-passphrase-yaml": _WORDS,
    "traits-passphrase-quoted": _WORDS,
    "traits-weak-pw-dotenv": _LOW_ENTROPY,
    "traits-weak-pw-prose": _LOW_ENTROPY,
}
KNOWN_FALSE_POSITIVES: dict[str, str] = {
    "look-alike-values-nonce": "a nonce written in a file is not a credential",
}


def _params(groups: dict[str, list[tuple[str, str]]]) -> list[ParameterSet]:
    params = []
    for group, cases in groups.items():
        for name, template in cases:
            case_id = f"{group}-{name}"
            reason = KNOWN_GAPS.get(case_id)
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            params.append(pytest.param(template, id=case_id, marks=marks))
    return params


def _negative_params() -> list[ParameterSet]:
    params = []
    for group, texts in NEGATIVE_GROUPS.items():
        for index, template in enumerate(texts):
            case_id = f"{group}-{index:02d}"
            if template.startswith("nonce = "):
                case_id = f"{group}-nonce"
            reason = KNOWN_FALSE_POSITIVES.get(case_id)
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            params.append(pytest.param(template, id=case_id, marks=marks))
    return params


POSITIVES = _params(POSITIVE_GROUPS)
NEGATIVES = _negative_params()


def test_the_set_is_large_enough_and_its_ids_unique() -> None:
    assert len(POSITIVES) >= 150 and len(NEGATIVES) >= 150
    ids = [p.id for p in [*POSITIVES, *NEGATIVES]]
    assert len(ids) == len(set(ids))
    assert set(KNOWN_GAPS) <= set(ids) and set(KNOWN_FALSE_POSITIVES) <= set(ids)


@pytest.mark.parametrize("template", POSITIVES)
def test_secret_does_not_survive_redaction(template: str) -> None:
    text, value = fill(template)
    assert value.splitlines()[0] in text  # a key block is indented or prefixed line by line
    redacted, findings = redact(text)
    assert findings
    assert survivors(value, redacted) == []


@pytest.mark.parametrize("template", NEGATIVES)
def test_look_alike_reads_unchanged(template: str) -> None:
    text = fill_any(template)
    assert redact(text)[0] == text
