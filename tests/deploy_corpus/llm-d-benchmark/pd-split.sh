# LB (negative): the same scenario layout with decode at TP 4. Falcon-H1-0.5B pages 800
# tokens at TP 1 and 400 at TP 4 (`kvalign check tiiuae/Falcon-H1-0.5B-Base --prefill-tp 1
# --decode-tp 4`: split, exit 1): 400 is no multiple of 800, NIXL cannot pair them.
export LLMDBENCH_DEPLOY_MODEL_LIST="tiiuae/Falcon-H1-0.5B-Base"

export LLMDBENCH_VLLM_MODELSERVICE_PREFILL_REPLICAS=1
export LLMDBENCH_VLLM_MODELSERVICE_PREFILL_EXTRA_ARGS="[--kv-transfer-config____'{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_both\"}'____--tensor-parallel-size____REPLACE_ENV_LLMDBENCH_VLLM_MODELSERVICE_PREFILL_TENSOR_PARALLELISM]"

export LLMDBENCH_VLLM_MODELSERVICE_DECODE_TENSOR_PARALLELISM=4
export LLMDBENCH_VLLM_MODELSERVICE_DECODE_REPLICAS=1
export LLMDBENCH_VLLM_MODELSERVICE_DECODE_EXTRA_ARGS="[--kv-transfer-config____'{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_both\"}'____--tensor-parallel-size____REPLACE_ENV_LLMDBENCH_VLLM_MODELSERVICE_DECODE_TENSOR_PARALLELISM]"
