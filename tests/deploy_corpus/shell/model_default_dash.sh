#!/bin/bash
# S5 (positive): an unquoted default with dashes in it is the whole default (bash reads
# ${V:-word} to the closing brace): SERVED_NAME is falcon-h1-pd (never "falcon"), MODEL
# tiiuae/Falcon-H1-0.5B-Base, TP 2.
MODEL=${MODEL:-tiiuae/Falcon-H1-0.5B-Base}
TP=${TP:-2}
SERVED_NAME=${SERVED_NAME:-falcon-h1-pd}
# prefill
vllm serve $MODEL -tp $TP --served-model-name ${SERVED_NAME} --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}' &
# decode
vllm serve $MODEL -tp $TP --served-model-name $SERVED_NAME --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}'
