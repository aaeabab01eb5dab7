#!/bin/bash
# S3 (negative): the GPU count is only known when the script runs ($(nvidia-smi …)), so
# both branches are evaluated: TP 4 and TP 1 for each pool.
MODEL=tiiuae/Falcon-H1-0.5B-Base
GPUS=$(nvidia-smi -L | wc -l)
if [ "$GPUS" -ge 8 ]; then
  TP=4
else
  TP=1
fi
# prefill
vllm serve $MODEL -tp $TP --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}' &
# decode
vllm serve $MODEL -tp $TP --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}'
