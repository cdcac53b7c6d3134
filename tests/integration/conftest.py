"""Fixtures every integration test may use: throwaway network namespaces.

As pyroute2's fixtures give each test its own namespace (``nsname``) and remove it
whatever happens, ``netns`` is a fresh pinned namespace for one test and
``netns_factory(tag)`` makes as many as a test needs; all are removed at teardown, even
after a failure or when the test removed one itself. Names are short (IFNAMSIZ-safe),
unique per process, and start with the test directory's prefix (``netns_prefix``,
overridden by a directory's conftest) so leftovers are traceable.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator

import pytest

from pycni import ns

_counter = itertools.count(1)


@pytest.fixture
def netns_prefix() -> str:
    return "itg"


@pytest.fixture
def netns_factory(netns_prefix: str) -> Iterator[Callable[[str], str]]:
    """``make(tag)`` creates a namespace named ``<prefix><tag><pid><n>`` and returns its
    path; every one made is deleted at the end of the test."""
    made: list[str] = []

    def make(tag: str) -> str:
        name = f"{netns_prefix}{tag}{os.getpid() % 1000:03d}{next(_counter):03d}"[:15]
        path = ns.create_netns(name)
        made.append(path)
        return path

    try:
        yield make
    finally:
        for path in reversed(made):
            ns.delete_netns(path)


@pytest.fixture
def netns(netns_factory: Callable[[str], str]) -> str:
    """One fresh network namespace (its path) for this test."""
    return netns_factory("ns")
