from vllm import _fake

STR_DTYPE_TO_TORCH_DTYPE = {"bfloat16": _fake.BFLOAT16, "float32": _fake.FLOAT32, "fp8": _fake.FP8}
