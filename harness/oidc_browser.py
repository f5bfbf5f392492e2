"""The human's side of an OAuth grant at the real provider (harness/real_oidc.py), played with
httpx as the remote-client page tests play theirs: a browser that keeps cookies, follows the
provider's own redirects, and fills the provider's sign-in, consent and device-code forms.

:func:`authorize` walks an authorization URL to the final redirect back to the client and
returns that URL without fetching it (the test hands it to the CLI's loopback listener, or
fetches it itself with ``deliver=True``). :func:`approve_device` enters a device's user code and
signs in and consents, as the human does on the verification page.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import httpx

MAX_STEPS = 12  # sign-in, consent and the redirects between them take about eight


@dataclass
class Form:
    action: str
    method: str
    fields: dict[str, str] = field(default_factory=dict)


class _Forms(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.forms: list[Form] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = {key: value or "" for key, value in attrs}
        if tag == "form":
            self.forms.append(Form(named.get("action", ""), named.get("method", "get").lower()))
        elif tag == "input" and self.forms and named.get("name"):
            self.forms[-1].fields[named["name"]] = named.get("value", "")


def forms(html: str) -> list[Form]:
    parser = _Forms()
    parser.feed(html)
    return parser.forms


class Browser:
    """One browser profile: its cookies are the provider's session for that human."""

    def __init__(self, ca_file: Path, account: str = "alice", *, consent: bool = True) -> None:
        self.http = httpx.Client(
            verify=ssl.create_default_context(cafile=ca_file), trust_env=False, timeout=10
        )
        self.account = account
        self.consent = consent

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def authorize(self, url: str, redirect_prefix: str, *, deliver: bool = False) -> str:
        """Follow ``url`` through sign-in and consent to the redirect that starts with
        ``redirect_prefix``; return it (fetched too when ``deliver``)."""
        answer = self.http.get(url)
        final = self._walk(answer, redirect_prefix)
        if deliver:
            httpx.get(final, timeout=10, trust_env=False)
        return final

    def approve_device(self, verification_uri: str, user_code: str) -> str:
        """Enter ``user_code`` on the verification page, sign in and consent; return the last
        page's text (the provider's "you may close this window")."""
        page = self.http.get(verification_uri)
        entry = self._only_form(page)
        entry.fields["user_code"] = user_code
        answer = self._submit(page, entry)
        return self._walk(answer, redirect_prefix=None)

    def _walk(self, answer: httpx.Response, redirect_prefix: str | None) -> str:
        for _ in range(MAX_STEPS):
            if answer.is_redirect:
                target = urljoin(str(answer.url), answer.headers["location"])
                if redirect_prefix is not None and target.startswith(redirect_prefix):
                    return target
                self._same_origin(answer, target)
                answer = self.http.get(target)
                continue
            if answer.status_code != 200:
                raise AssertionError(f"{answer.status_code} at {answer.url}: {answer.text[:500]}")
            found = forms(answer.text)
            if not found:
                if redirect_prefix is None:
                    return answer.text  # the device flow ends on the provider's success page
                raise AssertionError(f"no form and no redirect at {answer.url}")
            if redirect_prefix is None and found[0].fields.get("user_code") == "":
                return answer.text  # back at an empty code page: the human aborted
            answer = self._submit(answer, self._fill(found[0]))
        raise AssertionError(f"more than {MAX_STEPS} steps")

    def _fill(self, form: Form) -> Form:
        prompt = form.fields.get("prompt")
        if prompt == "login":
            form.fields.update(login=self.account, password="any")
        elif "confirm" in form.fields and not self.consent:  # the device page's "Abort"
            form.fields.pop("confirm")
            form.fields["abort"] = "yes"
        elif prompt == "consent" and not self.consent:  # the consent page's "Cancel" link
            return Form(form.action.rstrip("/") + "/abort", "get")
        return form

    def _only_form(self, page: httpx.Response) -> Form:
        found = forms(page.text)
        if page.status_code != 200 or len(found) != 1:
            raise AssertionError(f"{page.status_code} at {page.url}: {page.text[:500]}")
        return found[0]

    def _submit(self, page: httpx.Response, form: Form) -> httpx.Response:
        target = urljoin(str(page.url), form.action)
        self._same_origin(page, target)
        if form.method == "post":
            return self.http.post(target, data=form.fields)
        return self.http.get(target, params=form.fields)

    @staticmethod
    def _same_origin(page: httpx.Response, target: str) -> None:
        # The browser only ever walks the provider's own pages; anything else is a wrong turn.
        if urlsplit(target).netloc != urlsplit(str(page.url)).netloc:
            raise AssertionError(f"left the provider for {target}")
