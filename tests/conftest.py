from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _broker_accounts_in_tmp(tmp_path_factory: pytest.TempPathFactory,
                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Brokers that `distrl broker` and `farm up` start keep their accounts under the
    test's temp dir, not the user's ~/.local/state (subprocesses inherit it)."""
    d: Path = tmp_path_factory.mktemp("broker-accounts")
    monkeypatch.setenv("DISTRL_BROKER_ACCOUNTS", str(d))


@pytest.fixture(autouse=True)
def _keys_in_tmp(tmp_path_factory: pytest.TempPathFactory,
                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The local learner key that `distrl learner`, `farm up` and `deploy` share by
    default lives under the test's temp dir too (one per test: processes a test starts
    agree on it, tests do not share it)."""
    monkeypatch.setenv("DISTRL_KEYS", str(tmp_path_factory.mktemp("keys")))
