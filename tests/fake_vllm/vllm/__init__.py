"""Stand-in vLLM for kvalign tests (see ../README.md). Not the real package."""

__version__ = "0.33.0"
