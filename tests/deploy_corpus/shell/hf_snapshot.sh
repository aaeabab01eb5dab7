#!/bin/bash
# S10 (positive): a Hugging Face cache snapshot folder is that Hub model at a revision:
# read as tiiuae/Falcon-H1-0.5B-Base (bundled), never "no such file".
SNAP=/root/.cache/huggingface/hub/models--tiiuae--Falcon-H1-0.5B-Base/snapshots/4b4e2b1f7e10d9f3c2a1b0e9d8c7b6a5f4e3d2c1
# prefill
vllm serve $SNAP -tp 2 --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}' &
# decode
vllm serve $SNAP -tp 2 --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}'
