#!/bin/bash
# S8 (positive): Slurm srun with options (values as separate words and as --opt=value)
# before the command, and srun running bash -c: prefill TP 4, decode TP 2.
MODEL=tiiuae/Falcon-H1-0.5B-Base
# prefill
srun --nodes 1 --ntasks-per-node=1 --gpus-per-node 4 -J prefill vllm serve $MODEL -tp 4 --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}' &
# decode
srun -N 1 --exclusive --container-image vllm/vllm-openai:v0.32.1 bash -c "vllm serve $MODEL -tp 2 --kv-transfer-config '{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_consumer\"}'"
