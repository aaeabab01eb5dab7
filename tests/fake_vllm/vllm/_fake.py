"""Shared state of the stand-in: fake torch dtypes and the behaviour switch."""

import os


class FakeDtype:
    def __init__(self, name: str, itemsize: int) -> None:
        self.name = name
        self.itemsize = itemsize

    def __str__(self) -> str:
        return f"torch.{self.name}"


BFLOAT16 = FakeDtype("bfloat16", 2)
FLOAT32 = FakeDtype("float32", 4)
FP8 = FakeDtype("float8_e4m3fn", 1)


def mode() -> str:
    return os.environ.get("FAKE_VLLM_MODE", "ok")
