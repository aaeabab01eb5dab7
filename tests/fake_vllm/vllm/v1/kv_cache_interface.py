"""Stand-in KV-cache specs: page sizes as vLLM defines them."""

import math


def get_kv_quant_mode(cache_dtype):
    return None


class FullAttentionSpec:
    def __init__(self, block_size, num_kv_heads, head_size, dtype, kv_quant_mode=None):
        self.page_size_bytes = 2 * block_size * num_kv_heads * head_size * dtype.itemsize


class MLAAttentionSpec:
    def __init__(
        self, block_size, num_kv_heads, head_size, dtype, cache_dtype_str, kv_quant_mode=None
    ):
        self.page_size_bytes = block_size * num_kv_heads * head_size * dtype.itemsize


class MambaSpec:
    def __init__(self, shapes, dtypes, block_size):
        self.page_size_bytes = sum(
            math.prod(shape) * dtype.itemsize for shape, dtype in zip(shapes, dtypes, strict=True)
        )
