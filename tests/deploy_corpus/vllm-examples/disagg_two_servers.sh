#!/bin/bash
# R1 (negative): two kv_both commands with nothing next to them naming a role: kvalign does
# not guess from the file name; it says the role is unknown.
MODEL=tiiuae/Falcon-H1-0.5B-Base
CUDA_VISIBLE_DEVICES=0 vllm serve $MODEL --port 8100 \
    --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_both"}' &
CUDA_VISIBLE_DEVICES=1 vllm serve $MODEL --port 8200 \
    --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_both"}' &
wait
