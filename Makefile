# kvalign's vocabulary: install demo test lint bench
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install demo test lint format bench docs clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,plot]'
	touch $(STAMP)

install: $(STAMP)  ## create .venv and install kvalign with dev and plot extras

demo: $(STAMP)  ## the main job on a bundled real config (no network); the pair is flagged on purpose
	HF_HUB_OFFLINE=1 $(BIN)/kvalign check nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 \
		--prefill-tp 8 --decode-tp 1 || test $$? -eq 1

test: $(STAMP)  ## unit, golden, property, corpus and CLI tests, with line coverage of kvalign/
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest --cov=kvalign --cov-report=term

lint: $(STAMP)  ## ruff + mypy
	$(BIN)/ruff check kvalign tests
	$(BIN)/ruff format --check kvalign tests
	$(BIN)/mypy kvalign

format: $(STAMP)
	$(BIN)/ruff format kvalign tests
	$(BIN)/ruff check --fix kvalign tests

bench: $(STAMP)  ## wall time and peak RSS of the main commands (writes BENCHMARKS.md)
	$(BIN)/python benchmarks/bench.py

docs: $(STAMP)  ## regenerate the command output in docs/why.md and docs/*.svg
	HF_HUB_OFFLINE=1 $(BIN)/python docs/build.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build dist *.egg-info
