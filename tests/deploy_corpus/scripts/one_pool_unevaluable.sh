#!/bin/bash
# D2 (positive): the prefill pool cannot be evaluated (unset $PREFILL_ARGS); the decode pool's
# own finding (TP 16 is invalid for Nemotron 3 Nano: KVA010) is still reported.
MODEL=nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16
vllm serve $MODEL $PREFILL_ARGS --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}' &
vllm serve $MODEL -tp 16 --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}'
