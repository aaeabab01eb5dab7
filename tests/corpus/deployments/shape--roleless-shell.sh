vllm serve nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 -tp 8 --kv-transfer-config '{"kv_connector":"NixlConnector"}'
