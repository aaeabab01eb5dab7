#!/bin/bash
# S2 (positive): arrays a=(…), a+=(…) and "${a[@]}" reach vllm serve word by word:
# both pools run TP 2 with block size 800.
MODEL=tiiuae/Falcon-H1-0.5B-Base
COMMON=(--tensor-parallel-size 2)
COMMON+=(--block-size 800 --max-model-len 8192)
# prefill
vllm serve "$MODEL" "${COMMON[@]}" --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}' &
# decode
vllm serve "$MODEL" "${COMMON[@]}" --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}'
