# LB (negative): a scenario that stops before its end (an unconditional exit after the
# model): the roles it would set are never known, so it is not evaluated (exit 3), not
# taken as llm-d-benchmark's defaults.
export LLMDBENCH_DEPLOY_MODEL_LIST="tiiuae/Falcon-H1-0.5B-Base"
exit 0
export LLMDBENCH_VLLM_MODELSERVICE_DECODE_TENSOR_PARALLELISM=4
