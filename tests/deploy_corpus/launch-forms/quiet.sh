#!/bin/bash
# Q2 (negative): a tmux session with no command, a substitution that launches nothing, a
# here-document fed to cat: no launch among them; the one launch is a standalone server.
tmux new -d -s work
STAMP=$(date +%s)
cat <<EOF_NOTE
vllm serve is started below
EOF_NOTE
vllm serve nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 --tensor-parallel-size 2
