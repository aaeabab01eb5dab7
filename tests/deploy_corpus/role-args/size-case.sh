#!/bin/bash
# Q3 (negative): a positional default that picks a size, not a role: the no-argument run
# (TP 1) is the one evaluated, as bash runs it.
SIZE=${1:-small}
case "$SIZE" in
  small) TP=1 ;;
  large) TP=8 ;;
esac
vllm serve nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 --tensor-parallel-size $TP
