"""kvalign: predict vLLM's hybrid KV-cache block sizes for prefill/decode TP pairs."""

__version__ = "0.1.0"
