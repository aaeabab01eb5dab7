#!/bin/bash
# R1 (negative): a script that launches vLLM once: its file name gives the role.
vllm serve tiiuae/Falcon-H1-0.5B-Base --port 8200 \
    --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'
