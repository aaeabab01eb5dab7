#!/bin/bash
# R1 (positive): two kv_both commands; the file name says "prefill" but names the technique.
# Each command's role comes from the comment next to it.
MODEL=tiiuae/Falcon-H1-0.5B-Base

# prefilling instance
CUDA_VISIBLE_DEVICES=0 vllm serve $MODEL --port 8100 --max-model-len 8192 \
    --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_both"}' &

# decoding instance
CUDA_VISIBLE_DEVICES=1 vllm serve $MODEL --port 8200 --max-model-len 8192 \
    --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_both"}' &
wait
