#!/bin/bash
# Q3 (positive): a sourced file kvalign does not read: a warning names it, and each
# ${V:-default} used after it is noted (the file may set V).
source ./cluster-env.sh
vllm serve ${MODEL:-nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16} --tensor-parallel-size ${TP:-2}
