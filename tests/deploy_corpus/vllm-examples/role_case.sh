#!/bin/bash
# B1 (positive): the role is chosen by `case "$1"`: both items are evaluated, each its own pool.
MODEL=${MODEL:-"tiiuae/Falcon-H1-0.5B-Base"}
case "$1" in
  prefill)
    KV_ROLE=kv_producer ;;
  decode)
    KV_ROLE=kv_consumer ;;
  *)
    echo "usage: $0 prefill|decode"; exit 1 ;;
esac
vllm serve "$MODEL" --kv-transfer-config "{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"$KV_ROLE\"}"
