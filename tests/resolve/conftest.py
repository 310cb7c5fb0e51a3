from tests.lock.conftest import das_index, das_wheelhouses  # noqa: F401
