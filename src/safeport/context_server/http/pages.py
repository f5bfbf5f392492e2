"""The pages the browser sees: the authorization's code to compare with the approval card while
the human decides, an error page that redirects nowhere, and an action's approval page (which
card to answer, and how, on the human's own machine).

No script at all: the waiting page reloads itself (a meta refresh to the same origin) onto the
long poll, which answers with the next page or the redirect. Every value is HTML-escaped, and
the Content-Security-Policy allows nothing but the inline style: no script, no frame, no form,
no resource from anywhere.
"""

from __future__ import annotations

from html import escape
from urllib.parse import quote

from starlette.responses import HTMLResponse

from safeport.shared.visible_text import visible

CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "content-security-policy": CSP,
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}
WAIT_PATH = "/authorize/wait"

_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:36em;margin:3em auto;padding:0 1em}"
    ".code{font:bold 2em monospace;letter-spacing:.15em;padding:.3em .6em;border:2px solid;"
    "display:inline-block}"
)


def waiting_page(
    request_id: str, user_code: str, client_name: str | None, redirect_host: str | None
) -> HTMLResponse:
    """Shows the code the approval card shows, and reloads onto the long poll."""
    target = f"{WAIT_PATH}?request_id={quote(request_id, safe='')}"
    # The gateway sends both inert; escaped again here, a line break or a bidi override in a
    # client's name can neither reorder nor break up the sentence around it.
    client = escape(visible(client_name or "an unnamed client"))
    host = f" (it will return to <b>{escape(visible(redirect_host))}</b>)" if redirect_host else ""
    body = (
        f"<h1>Approve this client on your computer</h1>"
        f"<p><b>{client}</b> asks to read your workspace{host}.</p>"
        f"<p>Your safeport approval card shows a code. Approve only if it is this one:</p>"
        f'<p class="code" data-user-code="{escape(user_code)}">{escape(user_code)}</p>'
        f"<p>This page moves on by itself once you answered the card.</p>"
    )
    refresh = f'<meta http-equiv="refresh" content="1;url={escape(target)}">'
    return _page("Waiting for your approval", body, 200, refresh, request_id)


def error_page(status: int, error: str, description: str | None) -> HTMLResponse:
    """An authorization that cannot go on; the browser is sent nowhere."""
    text = f"<p>{escape(description)}</p>" if description else ""
    body = f"<h1>This authorization cannot go on</h1><p><code>{escape(error)}</code></p>{text}"
    return _page("Authorization refused", body, status)


def ended_page(state: str) -> HTMLResponse:
    """The request expired (or was answered elsewhere) with nowhere to send the browser."""
    body = f"<h1>This authorization has ended</h1><p>{escape(state)}. Start again from the app.</p>"
    return _page("Authorization ended", body, 410)


APPROVAL_PATH = "/approval/"


def approval_page(card: str | None, approve_with: str | None, waiting: bool) -> HTMLResponse:
    """An action waiting for the human (``card`` None: unknown or no longer held). It answers
    nothing: the card is answered where the gateway runs, with the passphrase or a key."""
    if card is None or approve_with is None:
        body = (
            "<h1>No approval waits here</h1><p>It was answered, timed out, or never existed. "
            "Return to the app: it has the result, or can propose the action again.</p>"
        )
        return _page("No approval waiting", body, 404)
    if not waiting:
        # Ended: approved, refused, timed out or the gateway went away -- the page cannot tell
        # which, so it claims none of them (a human who never answered is not told someone did).
        body = (
            f'<h1>Card <code data-card="{escape(card)}">{escape(card)}</code> no longer waits</h1>'
            "<p>It was answered, or it timed out. Return to the app: it gets the outcome "
            "when it asks again.</p>"
        )
        return _page("Approval no longer waiting", body, 200)
    body = (
        "<h1>An action waits for your approval</h1>"
        "<p>On the computer running the safeport gateway, answer the card</p>"
        f'<p class="code" data-card="{escape(card)}">{escape(card)}</p>'
        f"<p>with <code>{escape(approve_with)}</code> (or <code>sp approvals</code>). "
        "The card says what the action does; approve only what you expect. "
        "This page cannot approve anything, and moves on by itself once you answered.</p>"
    )
    refresh = '<meta http-equiv="refresh" content="5">'
    return _page("Waiting for your approval", body, 200, refresh)


def _page(
    title: str, body: str, status: int, head: str = "", request_id: str | None = None
) -> HTMLResponse:
    marker = f' data-request-id="{escape(request_id)}"' if request_id else ""
    html = (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width">{head}'
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head>"
        f"<body{marker}>{body}</body></html>"
    )
    return HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)
