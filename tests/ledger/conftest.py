"""Fixtures of the call ledger tests: the inspector's lab, an app on the fake provider."""

from tests.inspector.conftest import lab, make_lab  # noqa: F401 (fixtures these tests use)
