#!/bin/bash
# S1 (positive): run with no arguments, $# is 0: the option loop runs zero times and the
# defaults are what bash launches: prefill TP 1, decode TP 4 (a split).
MODEL=tiiuae/Falcon-H1-0.5B-Base
PREFILL_TP=1
DECODE_TP=4
while [[ $# -gt 0 ]]; do
  case $1 in
    --small) PREFILL_TP=1; DECODE_TP=1; shift ;;
    --prefill-tp) PREFILL_TP=$2; shift 2 ;;
    --decode-tp) DECODE_TP=$2; shift 2 ;;
    *) echo "unknown option $1"; exit 1 ;;
  esac
done
# prefill
vllm serve $MODEL -tp $PREFILL_TP --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}' &
# decode
vllm serve $MODEL -tp $DECODE_TP --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}'
