#!/bin/bash
# A4 (positive): vLLM's NIXL accuracy-test style: the command is built in a variable and run
# with eval; the role comes from the comments and log names next to each command.
set -xe

MODEL_NAME=${MODEL_NAME:-"nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"}
PREFILL_TP=${PREFILL_TP:-2}
DECODE_TP=${DECODE_TP:-2}
GIT_ROOT=$(git rev-parse --show-toplevel)
KV_CONFIG='{"kv_connector":"NixlConnector","kv_role":"kv_both"}'

# Start the prefill instance
BASE_CMD="CUDA_VISIBLE_DEVICES=0,1 VLLM_NIXL_SIDE_CHANNEL_PORT=5559 vllm serve $MODEL_NAME \
  --port 8100 --enforce-eager --tensor-parallel-size $PREFILL_TP \
  --kv-transfer-config '$KV_CONFIG'"
eval "$BASE_CMD > prefill.log 2>&1 &"

# Start the decode instance
BASE_CMD="CUDA_VISIBLE_DEVICES=2,3 VLLM_NIXL_SIDE_CHANNEL_PORT=5659 vllm serve $MODEL_NAME \
  --port 8200 --enforce-eager --tensor-parallel-size $DECODE_TP \
  --kv-transfer-config '$KV_CONFIG'"
eval "$BASE_CMD > decode.log 2>&1 &"

python3 "${GIT_ROOT}/tests/v1/kv_connector/nixl_integration/toy_proxy_server.py" --port 8192
