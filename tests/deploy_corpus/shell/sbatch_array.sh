#!/bin/bash
#SBATCH --nodes=2
# S8 (negative): srun -n 2 starts one command line twice: one prefill pool, not two. The
# decode launch runs once per item of a known list (2 4): one command whose passes give
# two pools, TP 2 and TP 4, each paired with the prefill.
MODEL=tiiuae/Falcon-H1-0.5B-Base
# prefill
srun -n 2 vllm serve $MODEL -tp 2 --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}' &
for TP in 2 4; do
  # decode
  srun -n 1 vllm serve $MODEL -tp $TP --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}' &
done
wait
