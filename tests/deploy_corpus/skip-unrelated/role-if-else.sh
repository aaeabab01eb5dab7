#!/bin/bash
# Q4 (positive): one kv_both launch whose TP depends on a role variable the script does not
# set: the two alternatives could be each other's partner, so the role is unknown (exit 3).
# --skip-unrelated does not skip it: a launch was found, it is not unrelated.
if [ "$ROLE" = prefill ]; then TP=8; else TP=1; fi
vllm serve nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 --tensor-parallel-size $TP --block-size 2096 \
  --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'
