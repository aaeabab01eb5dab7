"""Stand-in platform: the alignment steps of Platform.update_block_size_for_backend."""

import math

from vllm import _fake


class Platform:
    device_name = "stand-in"

    @classmethod
    def get_device_capability(cls):
        return None

    @classmethod
    def _find_non_ssm_backends(cls, vllm_config):
        raise NotImplementedError("needs instantiated layers")

    @classmethod
    def update_block_size_for_backend(cls, vllm_config):
        from vllm.model_executor.layers.mamba import abstract
        from vllm.model_executor.models import ModelRegistry
        from vllm.v1.kv_cache_interface import FullAttentionSpec, MambaSpec

        backends = cls._find_non_ssm_backends(vllm_config)
        if not backends:
            return
        cache, model, parallel = (
            vllm_config.cache_config,
            vllm_config.model_config,
            vllm_config.parallel_config,
        )
        a = FullAttentionSpec(
            1, model.get_num_kv_heads(parallel), model.get_head_size(), model.dtype
        ).page_size_bytes
        model_cls, _ = ModelRegistry.resolve_model_cls(model.architecture)
        m = MambaSpec(
            model_cls.get_mamba_state_shape_from_config(vllm_config),
            model_cls.get_mamba_state_dtype_from_config(vllm_config),
            -1,
        ).page_size_bytes
        kernel_min = min(
            getattr(s, "base", s) for s in backends[0].get_supported_kernel_block_sizes()
        )
        align = max(kernel_min, cache.block_size)
        if cache.mamba_cache_mode == "align":
            align = math.lcm(
                align, abstract.get_mamba_prefill_checkpoint_alignment(vllm_config) or 1
            )
        block = align * -(-m // (align * a))
        if _fake.mode() == "block-plus-16":
            block += 16
        cache.block_size = max(cache.block_size, block)
        if cache.block_size * a != m:
            cache.mamba_page_size_padded = cache.block_size * a
