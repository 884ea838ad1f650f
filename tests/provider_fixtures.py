"""pytest fixtures for the loopback embedding-provider server (``tests.provider_servers``),
shared through tests/conftest.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.provider_servers import TEST_KEY, ProviderServer


@pytest.fixture
def server() -> Iterator[ProviderServer]:
    """A fresh ``ProviderServer`` on 127.0.0.1 for this test, accepting ``TEST_KEY``
    (16-dimensional vectors); stopped at teardown."""
    with ProviderServer(api_key=TEST_KEY) as s:
        yield s
