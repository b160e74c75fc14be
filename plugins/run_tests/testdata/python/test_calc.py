"""A fixture of the run_tests tool: tests that pass, fail, skip and err."""
import pytest


def add(a, b):
    return a + b


def test_add():
    assert add(2, 2) == 4


def test_add_wrong():
    assert add(2, 2) == 5, "two and two"


@pytest.mark.skip(reason="not on this machine")
def test_skipped():
    pass


@pytest.fixture
def broken():
    raise RuntimeError("fixture broke")


def test_uses_broken(broken):
    pass
