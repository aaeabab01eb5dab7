#!/bin/bash
# S3 (positive): the operands are known (GPUS=8), so the condition is decided: only the
# first branch runs, TP 4 for both pools, one pair, no alternatives.
MODEL=tiiuae/Falcon-H1-0.5B-Base
GPUS=8
if [ "$GPUS" -ge 8 ]; then
  TP=4
else
  TP=1
fi
# prefill
vllm serve $MODEL -tp $TP --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}' &
# decode
vllm serve $MODEL -tp $TP --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}'
