# LB (negative): the wide-ep-lws layout: MODEL_COMMAND custom, the command written by a
# here-document into a file made by $(mktemp) while the scenario is sourced. That file
# does not exist for kvalign (nothing is run), so the pools are not evaluated (exit 3),
# with the reason; never a silent pass.
export LLMDBENCH_DEPLOY_MODEL_LIST="tiiuae/Falcon-H1-0.5B-Base"
export LLMDBENCH_VLLM_MODELSERVICE_PREFILL_REPLICAS=1
export LLMDBENCH_VLLM_MODELSERVICE_PREFILL_MODEL_COMMAND=custom
export LLMDBENCH_VLLM_MODELSERVICE_PREFILL_EXTRA_ARGS=$(mktemp)
cat << EOF > $LLMDBENCH_VLLM_MODELSERVICE_PREFILL_EXTRA_ARGS
exec vllm serve tiiuae/Falcon-H1-0.5B-Base --tensor-parallel-size 1 \
--kv_transfer_config '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'
EOF
export LLMDBENCH_VLLM_MODELSERVICE_DECODE_REPLICAS=1
export LLMDBENCH_VLLM_MODELSERVICE_DECODE_MODEL_COMMAND=custom
export LLMDBENCH_VLLM_MODELSERVICE_DECODE_EXTRA_ARGS=$(mktemp)
cat << EOF > $LLMDBENCH_VLLM_MODELSERVICE_DECODE_EXTRA_ARGS
exec vllm serve tiiuae/Falcon-H1-0.5B-Base --tensor-parallel-size 1 \
--kv_transfer_config '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'
EOF
