def get_mamba_prefill_checkpoint_alignment(vllm_config):
    raise NotImplementedError("the stand-in has no instantiated layers")
