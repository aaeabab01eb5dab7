#!/usr/bin/env bash
# Falcon-H1 P/D on one host: prefill TP 4, decode TP 1.
set -euo pipefail
MODEL=tiiuae/Falcon-H1-0.5B-Base

CUDA_VISIBLE_DEVICES=0,1,2,3 vllm serve $MODEL \
  --tensor-parallel-size 4 \
  --port 8100 \
  --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}' &

VLLM_SSM_CONV_STATE_LAYOUT=DS CUDA_VISIBLE_DEVICES=4 vllm serve $MODEL \
  --port 8200 --max-model-len 512 \
  --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}' &
wait
