#!/bin/bash
# B2 (negative) / D3 (positive): MODEL is the script's first argument, unknown to kvalign;
# the message shows $1 and ${EXTRA_ARGS[@]} as written, each once.
MODEL=$1
# prefill
vllm serve $MODEL "${EXTRA_ARGS[@]}" --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}' --served-model-name $MODEL
