# aecg-bench: `make setup` then `make test`. See README.md.
SHELL := /bin/bash
PY ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
# torch is pinned first so that sentence-transformers does not pull a multi-GB CUDA build;
# constraints.txt pins every other package to the set the test suite passed with.
TORCH_SPEC ?= torch==2.13.0
TORCH_PIP_ARGS ?=
# Benchmark data: the shared offline copy when present, else the user cache (downloads when online).
export AECG_DATA_ROOT ?= $(if $(wildcard ../shared/data),$(abspath ../shared/data),$(HOME)/.cache/aecg_bench/data)
export OMP_WAIT_POLICY ?= PASSIVE

PRESET ?=
MODEL ?=
MEMORY_MODEL ?=
JOBS ?= 2
RUNTIME ?= local
# METHODS=+my_memory adds memory columns (an installed plugin's) to table1/table2; METHODS=a,b replaces them.
METHODS ?=
REPRODUCE_ARGS = $(if $(PRESET),--preset $(PRESET)) $(if $(MODEL),--model $(MODEL)) \
	$(if $(MEMORY_MODEL),--memory-model $(MEMORY_MODEL)) $(if $(DRY_RUN),--dry-run) --jobs $(JOBS) --runtime $(RUNTIME) \
	$(if $(METHODS),--methods $(METHODS))

.PHONY: setup setup-server test test-all lint smoke perf clean-results reproduce-table1 reproduce-table2 reproduce-mechanisms \
	reproduce-edv report view mutants mutants-survivors

setup:
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet $(TORCH_PIP_ARGS) "$(TORCH_SPEC)"
	bash scripts/setup/build_llama_cpp.sh $(BIN) constraints.txt
	$(BIN)/pip install --quiet -c constraints.txt -e ".[dev]"
	$(BIN)/python -m aecg_bench.doctor

# Optional: llama.cpp's llama-server for model=embedded_server (one shared server per command; not the
# default, docs/infra/speed.md). A portable build from the pinned sdist: ~10 CPU-minutes once, then reused.
setup-server:
	bash scripts/setup/build_llama_server.sh $(BIN) constraints.txt

test:
	$(BIN)/python -m pytest -q

test-all:
	$(BIN)/python -m pytest -q -m "slow or not slow"

lint:
	$(BIN)/ruff check .

smoke:
	$(BIN)/python -m aecg_bench.run experiment=smoke
	$(BIN)/python -m aecg_bench.run experiment_name=smoke benchmark=toy_tools memory=recorder

perf:
	$(BIN)/python scripts/perf/llm_overhead.py
	$(BIN)/python scripts/perf/aecg_recall_latency.py
	$(BIN)/python scripts/perf/recall_latency.py
	$(BIN)/python scripts/perf/embedded_throughput.py

# AECG Table 1 + Figure 5 / Table 2: sweep (resumable), then the table beside the paper's numbers.
# PRESET=smoke (default when no model is configured) | paper; MODEL/MEMORY_MODEL = litellm ids; DRY_RUN=1 prices the paper preset;
# RUNTIME=local (JOBS parallel runs) | slurm | ray (docs/infra/scale-out.md).
reproduce-table1:
	$(BIN)/python scripts/reproduce.py table1 $(REPRODUCE_ARGS)

reproduce-table2:
	$(BIN)/python scripts/reproduce.py table2 $(REPRODUCE_ARGS)

# AECG mechanism tests RQ2-RQ4 -> Table 3, Figures 3 and 4. PRESET=smoke runs the scripted mock world (offline).
reproduce-mechanisms:
	$(BIN)/python scripts/reproduce.py mechanisms $(REPRODUCE_ARGS)

# EDV Tables 1-5, sec. 5.4, Figures 4-6 (docs/memory/edv.md "Reproducing the paper"). PRESET=smoke (default
# without EDV_*_API_BASE: toy_tools, ONE embedded model x3 temperatures) | paper (conf/model/edv_pool_paper.yaml);
# ONLY=table1,fig4_epochs; POOL=<model config>; DRY_RUN=1 prices the paper preset from the smoke runs.
ONLY ?=
POOL ?=
reproduce-edv:
	$(BIN)/python scripts/reproduce.py edv $(if $(PRESET),--preset $(PRESET)) $(if $(ONLY),--only $(ONLY)) \
		$(if $(POOL),--pool $(POOL)) \
		$(if $(DRY_RUN),--dry-run) --jobs $(JOBS)

# One static page (results/report/index.html + report.md) with every table and figure the results can fill.
report:
	$(BIN)/python -m aecg_bench.analysis.site --results results --out results/report

# The run viewer (docs/infra/viewer.md): a local page over a results folder; RESULTS=results/<experiment>, PORT=8765.
RESULTS ?= results
PORT ?= 8765
view:
	$(BIN)/python -m aecg_bench.view $(RESULTS) --port $(PORT)

# Mutation testing (docs/quality.md), outside `make test`: PATHS = mutation packages or source paths
# (default: all, see pyproject [tool.aecg_bench.mutation]); MUTANTS_ARGS go to `mutmut run`.
PATHS ?=
MUTANTS_ARGS ?=
mutants:
	$(BIN)/python scripts/mutants.py run $(PATHS) $(if $(MUTANTS_ARGS),-- $(MUTANTS_ARGS))

mutants-survivors:
	$(BIN)/python scripts/mutants.py survivors $(PATHS)

# Our results only: results/reference/ (the papers' numbers) and results/README.md stay.
clean-results:
	find results -mindepth 1 -maxdepth 1 ! -name reference ! -name README.md -exec rm -rf {} +
