#!/bin/bash
# S4 (positive): a guard on the environment is a precondition the operator meets, not a
# path: noted with the variable's name, and the pair after it is evaluated.
[ -z "$HF_TOKEN" ] && { echo "set HF_TOKEN"; exit 1; }
if [ -z "$NIXL_HOME" ]; then
  echo "set NIXL_HOME"
  exit 1
fi
MODEL=tiiuae/Falcon-H1-0.5B-Base
# prefill
vllm serve $MODEL -tp 2 --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}' &
# decode
vllm serve $MODEL -tp 2 --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}'
