"""Stand-in model registry: Nemotron-H only."""

from vllm import _fake


class _NemotronH:
    @classmethod
    def get_mamba_state_shape_from_config(cls, vllm_config):
        hf = vllm_config.model_config.hf
        tp = vllm_config.parallel_config.tensor_parallel_size
        heads, head_dim, n = hf["mamba_num_heads"], hf["mamba_head_dim"], hf["ssm_state_size"]
        groups = hf["n_groups"]
        if groups % tp:
            groups += tp - groups % tp
        conv_dim = heads * head_dim + 2 * groups * n
        return ((hf["conv_kernel"] - 1, conv_dim // tp), (heads // tp, head_dim, n))

    @classmethod
    def get_mamba_state_dtype_from_config(cls, vllm_config):
        return (_fake.BFLOAT16, _fake.FLOAT32)


class ModelRegistry:
    @staticmethod
    def resolve_model_cls(architecture, model_config=None):
        if architecture != "NemotronHForCausalLM":
            raise ValueError(f"stand-in vLLM does not know {architecture}")
        return _NemotronH, architecture
