# LB (positive, standalone server): the inference-scheduling layout: no prefill role
# (PREFILL_REPLICAS=0), the decode pods serve every request with no --kv-transfer-config:
# an aggregated server (a note, exit 0), not an unpaired decode pool.
export LLMDBENCH_DEPLOY_MODEL_LIST="tiiuae/Falcon-H1-0.5B-Base"
export LLMDBENCH_VLLM_MODELSERVICE_PREFILL_REPLICAS=0
export LLMDBENCH_VLLM_MODELSERVICE_DECODE_REPLICAS=2
export LLMDBENCH_VLLM_MODELSERVICE_DECODE_TENSOR_PARALLELISM=2
export LLMDBENCH_VLLM_MODELSERVICE_DECODE_EXTRA_ARGS="[--disable-log-requests____--tensor-parallel-size____REPLACE_ENV_LLMDBENCH_VLLM_MODELSERVICE_DECODE_TENSOR_PARALLELISM]"
