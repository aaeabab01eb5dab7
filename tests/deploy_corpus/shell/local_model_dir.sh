#!/bin/bash
# S10 (negative): a plain local folder (no models--ORG--NAME/snapshots/REV layout) is a
# local path, not a Hub id: kvalign cannot read its config here, so not evaluated.
MODEL=/mnt/models/falcon-h1-0.5b
# prefill
vllm serve $MODEL -tp 2 --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}' &
# decode
vllm serve $MODEL -tp 2 --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}'
