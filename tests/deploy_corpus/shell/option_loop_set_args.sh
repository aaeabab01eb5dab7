#!/bin/bash
# S1 (negative): the script sets its own arguments (set --), so the loop runs over them:
# --small gives TP 1 / TP 1, not the defaults.
set -- --small
MODEL=tiiuae/Falcon-H1-0.5B-Base
PREFILL_TP=1
DECODE_TP=4
while [[ $# -gt 0 ]]; do
  case $1 in
    --small) PREFILL_TP=1; DECODE_TP=1; shift ;;
    *) echo "unknown option $1"; exit 1 ;;
  esac
done
# prefill
vllm serve $MODEL -tp $PREFILL_TP --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}' &
# decode
vllm serve $MODEL -tp $DECODE_TP --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}'
