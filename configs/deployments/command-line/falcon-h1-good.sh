#!/usr/bin/env bash
# Falcon-H1 P/D: both pools TP 2 from a shared --config; -tp on the command line wins.
export VLLM_SSM_CONV_STATE_LAYOUT=DS
# prefill
vllm serve --config falcon-h1-common.yaml -tp 2 --port 8100 \
  --kv_transfer_config='{"kv_connector":"NixlConnector","kv_role":"kv_producer"}' &
# decode
vllm serve --config falcon-h1-common.yaml -tp 2 --port 8200 \
  --kv-transfer-config.kv_connector NixlConnector --kv-transfer-config.kv_role kv_consumer &
wait
