"""Fixtures shared by test modules."""

import importlib

import pytest

# a throwaway PostgreSQL server: postgres_url (session), pg_conn (per test); see postgres.py
from postgres import pg_conn, postgres_url  # noqa: F401


@pytest.fixture
def checker_rejects(monkeypatch):
    """Make the independent checker reject every release (its report as computed, but
    ``passed`` false): what is refused must then never be written or returned."""
    check_module = importlib.import_module("blendin.check")
    real = check_module.check_regrouped

    def failing(*args, **kwargs):
        report = real(*args, **kwargs)
        report.passed = False
        return report

    monkeypatch.setattr(check_module, "check_regrouped", failing)
    # where the release stage calls it
    monkeypatch.setattr(importlib.import_module("blendin.anonymize.release"), "check_regrouped",
                        failing)
