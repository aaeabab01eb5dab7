"""Stand-in backend registry: FLASH_ATTN (any multiple of 16)."""

import enum


class MultipleOf:
    def __init__(self, base):
        self.base = base


class _FlashAttention:
    @staticmethod
    def get_name():
        return "FLASH_ATTN"

    @staticmethod
    def get_supported_kernel_block_sizes(kv_cache_spec=None):
        return [MultipleOf(16)]

    @classmethod
    def customize_spec(cls, spec):
        return spec


class AttentionBackendEnum(enum.Enum):
    FLASH_ATTN = "flash"

    def get_class(self):
        return _FlashAttention
