# kvalign's vocabulary: install demo test lint bench
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install demo test lint format bench docs geometry clean verify-releases release-disagreements mutation

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

# MODULES=versions backends ... limits the run; results stay in build/mutation/ (re-runs reuse them)
MODULES ?=
mutation: $(STAMP)  ## mutation testing (mutmut 3 + rule mutants), one module at a time; writes docs/mutation-report.md (not in CI, ~1 h)
	$(BIN)/python -m pip install --quiet -e '.[mutation]'
	HF_HUB_OFFLINE=1 $(BIN)/python tests/mutation/run.py $(MODULES)

bench: $(STAMP)  ## wall and CPU time, CPU ratios to a bare interpreter, peak RSS of the main commands (writes BENCHMARKS.md)
	$(BIN)/python benchmarks/bench.py

docs: $(STAMP)  ## regenerate the command output in docs/why.md and docs/*.svg
	HF_HUB_OFFLINE=1 $(BIN)/python docs/build.py

# ---- per-release golden vectors (needs the vLLM environment; never part of `make test`) ----
# Build it once: ../shared/tools/vllm-release-env.sh $(VLLM_ENV) $(VLLM_RELEASES)
VLLM_ENV      ?= /root/vllm-env
VLLM_RELEASES ?= 0.14.0 0.17.0 0.18.1 0.20.0 0.21.0 0.25.0 0.27.1 0.28.0 0.31.0 0.33.0
VLLM_GPUS     ?= B200
VLLM_RUN = VLLM_PLUGINS="" VLLM_LOGGING_LEVEL=ERROR HF_HUB_OFFLINE=1 PYTHONPATH=$(VLLM_ENV)/$(1) \
	$(VLLM_ENV)/venv/bin/python tests/golden/build_release_vectors.py

tests/golden/vllm-%.jsonl: tests/golden/build_release_vectors.py kvalign/vllm_probe/*.py
	$(call VLLM_RUN,$*) --gpu H100 --out $@.tmp
	for gpu in $(VLLM_GPUS); do $(call VLLM_RUN,$*) --gpu $$gpu --append --out $@.tmp || exit 1; done
	mv $@.tmp $@

# the fidelity cases (prefix caching asked for, the text-only Qwen3.5, the transformers side
# of 0.19.1), releases older than the grid's included
FIDELITY_RELEASES ?= 0.10.2 0.11.1 0.14.0 0.17.0 0.19.1 0.25.0 0.26.0 0.27.1 0.33.0
FIDELITY_RUN = VLLM_PLUGINS="" VLLM_LOGGING_LEVEL=ERROR HF_HUB_OFFLINE=1 PYTHONPATH=$(1) \
	$(VLLM_ENV)/venv/bin/python tests/golden/build_fidelity_vectors.py

tests/golden/fidelity-%.jsonl: tests/golden/build_fidelity_vectors.py kvalign/vllm_probe/*.py
	$(call FIDELITY_RUN,$(VLLM_ENV)/$*) --out $@.tmp && mv $@.tmp $@

# 0.19.1 allows transformers 4.57 and 5: 0.14.0's directory holds transformers 4.57.6
tests/golden/fidelity-0.19.1-transformers-4.57.6.jsonl: tests/golden/build_fidelity_vectors.py kvalign/vllm_probe/*.py
	$(call FIDELITY_RUN,$(VLLM_ENV)/0.19.1:$(VLLM_ENV)/0.14.0) --out $@.tmp && mv $@.tmp $@

# pipeline-parallel stages (build_pp_vectors.py): the model-config era and the per-stage one
PP_RELEASES ?= 0.19.1 0.20.0 0.27.1 0.33.0

tests/golden/pp-%.jsonl: tests/golden/build_pp_vectors.py kvalign/vllm_probe/*.py
	VLLM_PLUGINS="" VLLM_LOGGING_LEVEL=ERROR HF_HUB_OFFLINE=1 PYTHONPATH=$(VLLM_ENV)/$* \
		$(VLLM_ENV)/venv/bin/python tests/golden/build_pp_vectors.py --out $@.tmp && mv $@.tmp $@

# KV-cache groups (build_group_vectors.py)
GROUP_RELEASES ?= 0.20.0 0.27.1 0.33.0

tests/golden/groups-%.jsonl: tests/golden/build_group_vectors.py kvalign/vllm_probe/*.py
	VLLM_PLUGINS="" VLLM_LOGGING_LEVEL=ERROR HF_HUB_OFFLINE=1 PYTHONPATH=$(VLLM_ENV)/$* \
		$(VLLM_ENV)/venv/bin/python tests/golden/build_group_vectors.py --out $@.tmp && mv $@.tmp $@

# --kv-cache-dtype-skip-layers (build_skip_layer_vectors.py)
SKIP_RELEASES ?= 0.25.0 0.27.1 0.33.0

tests/golden/skip-layers-%.jsonl: tests/golden/build_skip_layer_vectors.py tests/golden/build_group_vectors.py kvalign/vllm_probe/*.py
	VLLM_PLUGINS="" VLLM_LOGGING_LEVEL=ERROR HF_HUB_OFFLINE=1 PYTHONPATH=$(VLLM_ENV)/$* \
		$(VLLM_ENV)/venv/bin/python tests/golden/build_skip_layer_vectors.py --out $@.tmp && mv $@.tmp $@

# the extract_hidden_states hidden-state group (build_skip_layer_vectors.py --hidden-states)
HIDDEN_RELEASES ?= 0.25.0 0.27.1 0.28.0 0.33.0

tests/golden/hidden-state-%.jsonl: tests/golden/build_skip_layer_vectors.py tests/golden/build_group_vectors.py kvalign/vllm_probe/*.py
	VLLM_PLUGINS="" VLLM_LOGGING_LEVEL=ERROR HF_HUB_OFFLINE=1 PYTHONPATH=$(VLLM_ENV)/$* \
		$(VLLM_ENV)/venv/bin/python tests/golden/build_skip_layer_vectors.py --hidden-states --out $@.tmp && mv $@.tmp $@

# what 0.33's own `vllm serve` parser accepts (build_parser_vectors.py)
tests/golden/serve-parser-%.json: tests/golden/build_parser_vectors.py
	VLLM_PLUGINS="" VLLM_LOGGING_LEVEL=ERROR HF_HUB_OFFLINE=1 PYTHONPATH=$(VLLM_ENV)/$* \
		$(VLLM_ENV)/venv/bin/python tests/golden/build_parser_vectors.py --out $@.tmp && mv $@.tmp $@

verify-releases:  ## rebuild tests/golden/vllm-X.Y.Z.jsonl, fidelity-X.Y.Z.jsonl, pp-X.Y.Z.jsonl, groups-X.Y.Z.jsonl and skip-layers-X.Y.Z.jsonl with each release's own code (make -j2 ok)
	@test -x $(VLLM_ENV)/venv/bin/python || { echo "no $(VLLM_ENV): run ../shared/tools/vllm-release-env.sh $(VLLM_ENV) $(VLLM_RELEASES)"; exit 2; }
	$(VLLM_ENV)/venv/bin/python -m pip install --quiet --no-deps -e .
	$(MAKE) $(foreach v,$(VLLM_RELEASES),tests/golden/vllm-$(v).jsonl)
	$(MAKE) $(foreach v,$(FIDELITY_RELEASES),tests/golden/fidelity-$(v).jsonl) \
		tests/golden/fidelity-0.19.1-transformers-4.57.6.jsonl
	$(MAKE) $(foreach v,$(PP_RELEASES),tests/golden/pp-$(v).jsonl)
	$(MAKE) $(foreach v,$(GROUP_RELEASES),tests/golden/groups-$(v).jsonl)
	$(MAKE) $(foreach v,$(SKIP_RELEASES),tests/golden/skip-layers-$(v).jsonl)
	$(MAKE) $(foreach v,$(HIDDEN_RELEASES),tests/golden/hidden-state-$(v).jsonl)
	$(MAKE) tests/golden/serve-parser-0.33.0.json

DISAGREEMENTS ?= /work/notes/release-disagreements.md
release-disagreements: $(STAMP)  ## kvalign vs every release's vectors, per field (also written to $(DISAGREEMENTS))
	HF_HUB_OFFLINE=1 $(BIN)/python tests/golden/release_disagreements.py --out $(DISAGREEMENTS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build dist *.egg-info

geometry: $(STAMP)  ## regenerate kvalign/sources/bundled_geometry.json (bundled models' geometry, via transformers)
	HF_HUB_OFFLINE=1 $(BIN)/python -m kvalign.sources.bundled --write
