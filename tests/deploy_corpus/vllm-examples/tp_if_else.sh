#!/bin/bash
# B1 (positive): TP is set in both branches of an if/else: each alternative is evaluated and
# reported, never "the last one written".
MODEL=nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16
if [ "$(nvidia-smi -L | wc -l)" -ge 8 ]; then
  PREFILL_TP=8
else
  PREFILL_TP=4
fi

# prefill
vllm serve $MODEL -tp $PREFILL_TP --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}' &
# decode
vllm serve $MODEL -tp 4 --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}' &
wait
