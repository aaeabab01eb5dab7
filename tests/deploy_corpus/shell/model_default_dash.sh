#!/bin/bash
# S5 (positive): an unquoted default with dashes in it is the whole default:
# MODEL is tiiuae/Falcon-H1-0.5B-Base (never "tiiuae/Falcon").
MODEL=${MODEL:-tiiuae/Falcon-H1-0.5B-Base}
TP=${TP:-2}
# prefill
vllm serve $MODEL -tp $TP --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}' &
# decode
vllm serve $MODEL -tp $TP --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}'
