#!/bin/bash
# A5 (negative): a helper script that launches no vLLM: skipped in a directory scan.
for i in $(seq 1 10); do
  curl -s http://localhost:8000/v1/completions -d '{"prompt":"hi"}'
done
