"""What of an executed action leaves the gateway (rung 9): to the agent and to the journal.

The agent gets only what the policy declares (output capped per command, declared response
fields per operation), with every secret the detector finds replaced by ``[REDACTED:<kind>]``;
the journal gets sizes, statuses and where secrets were withheld, never served content.

The credential the action ran with is caught first and differently, for every executor alike:
:func:`withhold_credential` refuses a whole result that holds it in any form
:class:`~safeport.shared.known_secrets.KnownSecrets` names, because the gateway knows its exact
bytes. It runs once, on the executor's typed result, before anything is encoded for the reply:
SQL rows (``bytea`` arrives here as its base64, which is decoded again at each alignment),
column names, HTTPS fields, SSH output. What is redacted after that is every *other* secret a
result may hold: a database password a remote command prints, a token inside an API answer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from safeport.action_gateway.executors.interface import ActionError
from safeport.shared.audit import JournalBody
from safeport.shared.known_secrets import KnownSecrets
from safeport.shared.schemas.wire import HttpResult, ResultRedaction, SqlResult, SshExecResult
from safeport.shared.secret_scan import redact

# Longer than any token format's prefix that could still be recognised whole; bounded so a
# cut one-line answer (minified JSON) loses its end, not all of it.
_PARTIAL_LAST_WORD = re.compile(r"\S{1,256}\Z")


def withhold_credential(
    result: SqlResult | SshExecResult | HttpResult,
    texts: list[str],
    blobs: Sequence[bytes] = (),
) -> None:
    """Raise ``bad_response`` if ``result`` holds the credential it was run with (its texts, or
    a key's decoded bytes: ``credential_texts.py``): in one value or split across neighbouring
    ones (every value's text joined end to end, in order)."""
    if isinstance(result, SqlResult):
        what = "the rows"
        # Row by row, and column by column: a value split over the rows of one column has
        # the other columns between its pieces in row order.
        down = [[row[i] for row in result.rows if i < len(row)] for i in range(len(result.columns))]
        value: object = [result.columns, result.rows, down]
    elif isinstance(result, SshExecResult):
        what = "the output"
        value = [result.stdout, result.stderr]
    else:
        what = "the answer"
        value = result.fields
    if KnownSecrets(texts, blobs).found_in_value(value):
        raise ActionError(
            "bad_response",
            f"{what} held the credential the action ran with; the whole result was withheld",
        )


def filter_ssh(result: SshExecResult, cap: int) -> SshExecResult:
    # The executor's result is a validated model already, and every value set below is of its
    # field's type (strings, flags, a count, validated redactions): a copy, not a second
    # validation of the whole result.
    data: dict[str, object] = {
        "stdout": result.stdout,
        "stderr": result.stderr,
        "stdout_truncated": result.stdout_truncated,
        "stderr_truncated": result.stderr_truncated,
    }
    redactions: list[ResultRedaction] = []
    for stream in ("stdout", "stderr"):
        text = data[stream]
        assert isinstance(text, str)
        if data[f"{stream}_truncated"]:
            # The executor cut this stream at its cap: the last word may be the first part of a
            # secret, too short for its format to be recognised, so it is not served.
            text = _PARTIAL_LAST_WORD.sub("", text)
        # Redacted before the cap here, so a secret straddling this cut is withheld whole
        # rather than served as its first half.
        text, found = _redacted(text, stream)
        redactions += found
        if len(text.encode("utf-8")) > cap:
            text = text.encode("utf-8")[:cap].decode("utf-8", "ignore")
            data[f"{stream}_truncated"] = True
        data[stream] = text
    data.update(redacted=len(redactions), redactions=redactions)
    return result.model_copy(update=data)


def filter_http(result: HttpResult, response_fields: list[str]) -> HttpResult:
    allowed = set(response_fields)
    redactions: list[ResultRedaction] = []
    fields: dict[str, object] = {}
    for name, value in result.fields.items():
        if name in allowed:
            fields[name] = _redacted_value(value, name, redactions)
    return HttpResult(
        status=result.status, fields=fields, redacted=len(redactions), redactions=redactions
    )


def filter_sql(result: SqlResult, columns: list[str]) -> SqlResult:
    """Only the declared columns, in the declared order (a column the statement does not
    return is absent), every value redacted like an HTTPS field."""
    index = {name: i for i, name in reversed(list(enumerate(result.columns)))}
    kept = [name for name in columns if name in index]
    redactions: list[ResultRedaction] = []
    rows = [
        [_redacted_value(row[index[name]], f"rows.{n}.{name}", redactions) for name in kept]
        for n, row in enumerate(result.rows)
    ]
    return SqlResult(
        columns=kept,
        rows=rows,
        row_count=result.row_count,
        truncated=result.truncated,
        duration_ms=result.duration_ms,
        redacted=len(redactions),
        redactions=redactions,
    )


def result_summary(result: SshExecResult | HttpResult | SqlResult) -> JournalBody:
    """Sizes, statuses and redactions (kind, field, lines) only: served content never goes into
    a journal."""
    summary: dict[str, object]
    if isinstance(result, SshExecResult):
        summary = {
            "exit_status": result.exit_status,
            "stdout_chars": len(result.stdout),
            "stderr_chars": len(result.stderr),
        }
    elif isinstance(result, SqlResult):
        summary = {
            "row_count": result.row_count,
            "truncated": result.truncated,
            "columns": result.columns,
        }
    else:
        summary = {"http_status": result.status, "fields": sorted(result.fields)}
    if result.redactions:
        summary["redacted"] = [item.model_dump() for item in result.redactions]
    return summary


def _redacted(text: object, where: str) -> tuple[str, list[ResultRedaction]]:
    assert isinstance(text, str)
    clean, findings = redact(text)
    return clean, [
        ResultRedaction(field=where, kind=f.kind, line=f.line, end_line=f.end_line)
        for f in findings
    ]


def _redacted_value(value: object, where: str, out: list[ResultRedaction]) -> object:
    """``value`` (any JSON) with every string in it redacted, keys included: a hostile service
    can put a token in a key as easily as in a value. Nested places are named by dotted path,
    as declared fields are."""
    if isinstance(value, str):
        clean, found = _redacted(value, where)
        out.extend(found)
        return clean
    if isinstance(value, list):
        return [_redacted_value(item, f"{where}.{i}", out) for i, item in enumerate(value)]
    if isinstance(value, dict):
        cleaned: dict[str, object] = {}
        for key, item in value.items():
            clean_key, found = _redacted(str(key), f"{where} (key)")
            out.extend(found)
            cleaned[clean_key] = _redacted_value(item, f"{where}.{clean_key}", out)
        return cleaned
    return value
