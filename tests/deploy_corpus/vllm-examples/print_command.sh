#!/bin/bash
# A4 (negative): the command is only printed, never run: no pool; the text plainly names
# `vllm serve`, so the file is reported (not evaluated), not skipped.
CMD="vllm serve tiiuae/Falcon-H1-0.5B-Base --tensor-parallel-size 2"
echo "run this on each node: $CMD"
