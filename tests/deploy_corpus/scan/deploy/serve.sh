#!/bin/bash
# A5 (positive): in a directory scan, a vLLM launch that yields no pool is "not evaluated"
# (exit 3) with the reason, never "skipped".
MODEL=tiiuae/Falcon-H1-0.5B-Base
CUDA_VISIBLE_DEVICES=0 vllm serve $MODEL --port 8100 \
    --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_both"}' &
CUDA_VISIBLE_DEVICES=1 vllm serve $MODEL --port 8200 \
    --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_both"}' &
wait
