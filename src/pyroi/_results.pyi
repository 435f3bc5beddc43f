"""Type stubs of pyroi._results (result allocation with reuse; the limit is exported from
pyroi)."""

import numpy as np

ENV_VARIABLE: str
DEFAULT_LIMIT: int
MIN_CACHED_BYTES: int
MAX_LIMIT: int

def set_result_cache_limit(limit: int) -> int: ...
def get_result_cache_limit() -> int: ...
def empty(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray: ...
