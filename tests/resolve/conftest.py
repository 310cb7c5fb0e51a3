import pytest

from tests.lock.conftest import das_index, das_wheelhouses  # noqa: F401
from tests.support.snapshots import snapshot_wheelhouse


@pytest.fixture(scope="session")
def snapshot(tmp_path_factory):
    """``snapshot(index_name)`` -> folder of metadata-only wheels of that PyPI snapshot."""
    base = tmp_path_factory.mktemp("snapshots")

    def build(name: str):
        return snapshot_wheelhouse(name, base / name)

    return build
