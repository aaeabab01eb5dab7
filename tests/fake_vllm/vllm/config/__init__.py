"""Stand-in config classes: only the fields kvalign's verify adapter passes."""

import contextlib
import json
from pathlib import Path

from vllm import _fake

_CURRENT = []


class ModelConfig:
    def __init__(
        self,
        model,
        tokenizer=None,
        skip_tokenizer_init=False,
        trust_remote_code=False,
        dtype="auto",
        hf_overrides=None,
    ):
        if _fake.mode() == "raise":
            raise RuntimeError("fake vLLM failure:\nno platform detected")
        raw = json.loads((Path(model) / "config.json").read_text())
        raw.update(hf_overrides or {})
        self.hf = raw
        self.architecture = raw["architectures"][0]
        self.dtype = _fake.BFLOAT16
        self.use_mla = False
        self.is_hybrid = True
        self.is_attention_free = False

    def get_head_size(self):
        return self.hf["head_dim"]

    def get_num_kv_heads(self, parallel_config):
        return max(1, self.hf["num_key_value_heads"] // parallel_config.tensor_parallel_size)


class CacheConfig:
    DEFAULT_BLOCK_SIZE = 16

    def __init__(
        self,
        block_size=None,
        cache_dtype="auto",
        enable_prefix_caching=True,
        mamba_cache_dtype="auto",
        mamba_ssm_cache_dtype="auto",
    ):
        self.user_specified_block_size = block_size is not None
        self.block_size = block_size if block_size is not None else self.DEFAULT_BLOCK_SIZE
        self.cache_dtype = cache_dtype
        self.mamba_cache_mode = "align" if enable_prefix_caching else "none"
        self.mamba_cache_dtype = mamba_cache_dtype
        self.mamba_ssm_cache_dtype = mamba_ssm_cache_dtype
        self.mamba_page_size_padded = None


class ParallelConfig:
    def __init__(self, tensor_parallel_size=1):
        self.tensor_parallel_size = tensor_parallel_size


class AttentionConfig:
    def __init__(self, backend=None):
        self.backend = backend


class VllmConfig:
    def __init__(self, model_config, cache_config, parallel_config, attention_config):
        heads = model_config.hf["num_attention_heads"]
        tp = parallel_config.tensor_parallel_size
        if heads % tp:
            raise ValueError(
                f"Total number of attention heads ({heads}) must be divisible by "
                f"tensor parallel size ({tp})."
            )
        self.model_config = model_config
        self.cache_config = cache_config
        self.parallel_config = parallel_config
        self.attention_config = attention_config


@contextlib.contextmanager
def set_current_vllm_config(config):
    _CURRENT.append(config)
    try:
        yield
    finally:
        _CURRENT.pop()
