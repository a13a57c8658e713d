"""The controller package under src/ is importable from the checkout (without installing it)."""
import os
import sys

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))), 'src')
if SRC not in sys.path:
    sys.path.insert(0, SRC)


import pytest  # noqa: E402  (after the path set-up above)


@pytest.fixture(autouse=True)
def plain_login_home(tmp_path, monkeypatch):
    """Jobs run ``bash -lc``: a HOME without the developer's login profile keeps each start at milliseconds."""
    home = tmp_path / 'login-home'
    home.mkdir()
    monkeypatch.setenv('HOME', str(home))
