"""Fixtures for the context server tests: anyio runs on asyncio."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"
