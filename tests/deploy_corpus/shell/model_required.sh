#!/bin/bash
# S5 (negative): ${MODEL:?…} has no default: bash stops unless MODEL is set, so the model
# is unknown: not evaluated, the message names MODEL.
MODEL=${MODEL:?set MODEL to a Hugging Face model id}
# prefill
vllm serve $MODEL -tp 2 --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}' &
# decode
vllm serve $MODEL -tp 2 --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}'
