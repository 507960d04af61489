# Two commands: `make run` (install, build the demo index if missing, start the app) and
# `make test` (install test needs, run the whole suite, browser tests included). Both idempotent.
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
DB ?= data/lancedb
PORT ?= 8501
# `make run MODE=demo`: read-only (no upload, delete, deactivate or fact edit); see README "Deploy for a team".
MODE ?=
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
# This machine's pip config names local mirrors that may be absent; hide that noise only.
PIPQ = 2>&1 | { grep -v "^WARNING: Location 'file:" || true; }

.PHONY: run test lint install install-test install-ray chromium nodejs demo bench clean screenshots

$(PY):
	@$(PYTHON) -c 'import sys; assert sys.version_info[:2] == (3, 11), "Python 3.11 is required, found " + sys.version' \
	  || { echo "make: need Python 3.11 (set PYTHON=/path/to/python3.11)"; exit 1; }
	$(PYTHON) -m venv $(VENV)

# Stamps make a second run reinstall nothing; editing a requirements file reinstalls.
$(VENV)/.installed: requirements.txt pyproject.toml | $(PY)
	$(PY) -m pip install -q -r requirements.txt $(PIPQ)
	$(PY) -m pip install -q --no-deps --no-build-isolation -e . $(PIPQ)
	@touch $@

$(VENV)/.installed-test: requirements-test.txt $(VENV)/.installed
	$(PY) -m pip install -q -r requirements-test.txt $(PIPQ)
	@touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

# The optional `ray` extra (its pins read from pyproject.toml) in its own venv that also sees .venv's packages (a
# .pth file), so pylance never enters the app's venv; tests/test_distributed.py runs its Ray part with this
# interpreter (the package from the checkout: run it from the repository root, e.g. `.venv-ray/bin/python -m retrieval`).
RAY_VENV := .venv-ray
$(RAY_VENV)/.installed: pyproject.toml $(VENV)/.installed
	rm -rf $(RAY_VENV)
	$(PYTHON) -m venv $(RAY_VENV)
	echo "$(abspath $(VENV))/lib/python3.11/site-packages" > $(RAY_VENV)/lib/python3.11/site-packages/app-venv.pth
	$(RAY_VENV)/bin/python -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["ray"]))' > $(RAY_VENV)/ray.txt
	$(RAY_VENV)/bin/python -m pip install -q -r $(RAY_VENV)/ray.txt $(PIPQ)
	@touch $@

install-ray: $(RAY_VENV)/.installed

# Debian's Chromium for the browser tests (never `playwright install`: no browser downloads here).
chromium:
	@if command -v chromium >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing Debian's chromium for the browser tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else echo "chromium is missing and we are not root: browser tests will skip (sudo apt-get install chromium)"; fi

# Debian's node for the browser-fusion parity test (tests/test_refuse_parity.py runs ui/refuse/fuse.mjs in node).
nodejs:
	@if command -v node >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing Debian's nodejs for the browser-fusion parity test"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs >/dev/null; \
	else echo "node is missing and we are not root: the parity test will skip (sudo apt-get install nodejs)"; fi

$(DB)/traces.lance: | $(VENV)/.installed
	$(PY) -m retrieval build-demo --db $(DB)

demo: $(DB)/traces.lance

run: $(VENV)/.installed $(DB)/traces.lance
	RETRIEVAL_DB=$(DB) $(if $(MODE),RETRIEVAL_MODE=$(MODE)) $(VENV)/bin/streamlit run app.py --server.headless true --server.port $(PORT) \
	  --browser.gatherUsageStats false

# Lint and types first (seconds), then the whole suite.
lint: $(VENV)/.installed-test
	$(PY) -m ruff check .
	$(PY) -m mypy

# Bytecode on even where the environment turns it off: pytest then keeps each test module's rewritten asserts in
# __pycache__ (ignored) instead of rewriting all of them on every run (collection 6.5-9.5 s -> 4-5.3 s here).
# One worker per core (`-n auto`), each test file whole on one worker (`--dist loadfile`: a file's module fixtures,
# e.g. its served app, are built once), the longest files first (tests/durations.json, by scripts/test_durations.py;
# `--no-loadscope-reorder` keeps that order rather than xdist's by test count, so short files fill the end).
# `CI=true make test` on 2 cores with nothing else running: 6 min 1 s - 6 min 54 s on 2026-12-05's machine (7 min 8 s
# for f348ee9's 1,954 tests, a reviewer reading beside it; 8 min 4 s -
# 8 min 43 s on the slower one before it; `-n 3` there: 10 min 16 s). Beside 4 CPU burners and helpers' tests (1-minute
# load sampled every 30 s after the first minute): 9575fe3 1,813 passed, 0 failed, pytest 25 min 3 s, load 6.6-21.6;
# dd654f6 1,816 passed, 0 failed, 25 min 54 s, load 6.0-24.8. Beside 6 burners (load 7.4-14.2, median 10.8, 3d68c04's
# tests): 1,839 passed, 3 errors, 31 min 23 s — the Ray job behind test_distributed.py ran past its 900 s timeout:
# Ray renices its workers to 15, so they starved (now run at the command's niceness: that job 459 s -> 109 s beside
# 6 burners). 02c19b4's tests beside 2 burners and helpers' work, 6 more burners part of the time (load 8.6-27.0,
# median 15.7): 1,850 passed, 0 failed, pytest 21 min 23 s (the test target's pytest line plus -k 'not make_run', in a
# detached worktree, beside `python3 -c 'while True: pass'` x2; load sampled every 30 s with /proc/loadavg).
# The tests' temporary stores on a tmpfs when the machine has one with room (LanceDB syncs every commit to disk: the
# store-heavy files ran 25-30 % faster on /dev/shm than on this machine's disk, side by side); elsewhere the default.
TEST_TMPDIR ?= $(shell [ -w /dev/shm ] && [ "$$(df -Pk /dev/shm | awk 'NR==2 {print $$4}')" -gt 4000000 ] && echo /dev/shm)
test: lint chromium nodejs install-ray
	$(if $(TEST_TMPDIR),TMPDIR=$(TEST_TMPDIR)) PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -n auto --dist loadfile \
	  --no-loadscope-reorder

# Regenerate the README's pictures (docs/screenshots/) from a running app; tests never write tracked files.
screenshots: $(VENV)/.installed-test chromium
	RETRIEVAL_SHOTS_DIR=$(CURDIR)/docs/screenshots $(PY) -m pytest tests/test_browser.py -q -k click_to_explain
	RETRIEVAL_SHOTS_DIR=$(CURDIR)/docs/screenshots $(PY) -m pytest tests/test_browser_inspector.py -q
	RETRIEVAL_SHOTS_DIR=$(CURDIR)/docs/screenshots $(PY) -m pytest tests/test_present.py -q -k laptop_width

# Benchmarks write docs/*.json and docs/eval/*.json, then docs/BENCHMARKS.md is rendered from them.
# EVAL points at the evaluation data (never copied into this repository).
EVAL ?= ../shared/eval
bench: $(VENV)/.installed-test chromium $(DB)/traces.lance
	$(PY) scripts/bench_bm25.py
	$(PY) scripts/bench_retrieve.py
	$(PY) scripts/bench_fusion.py
	$(PY) scripts/bench_models.py
	$(PY) scripts/bench_ann.py
	$(PY) scripts/bench_app_start.py
	$(PY) scripts/bench_snapshot.py
	$(PY) scripts/bench_judge_browser.py
	$(PY) scripts/bench_browser.py
	$(PY) scripts/bench_refuse.py
	$(PY) scripts/choose_hybrid_defaults.py --locomo $(EVAL)/locomo-dev/locomo-dev.json
	$(PY) -m retrieval eval --dataset beir:$(EVAL)/scifact --sweep --lab --out docs/eval/scifact.json
	$(PY) -m retrieval eval --dataset beir:$(EVAL)/scifact --reranker embedding --out docs/eval/scifact-rerank.json
	$(PY) -m retrieval eval --dataset beir:$(EVAL)/scifact --max-queries 50 --out docs/eval/scifact-50.json
	$(PY) -m retrieval eval --dataset beir:$(EVAL)/scifact --max-queries 50 --hyde gemma --out docs/eval/scifact-50-hyde.json
	$(PY) -m retrieval eval --dataset locomo:$(EVAL)/locomo-dev/locomo-dev.json --sweep --lab --out docs/eval/locomo.json
	$(PY) -m retrieval eval --dataset locomo:$(EVAL)/locomo-dev/locomo-dev.json --max-queries 300 --reranker embedding --out docs/eval/locomo-rerank.json
	$(PY) -m retrieval eval --dataset demo --sweep --lab --out docs/eval/demo.json
	$(PY) scripts/bench_peer.py --beir $(EVAL)/scifact --locomo $(EVAL)/locomo-dev/locomo-dev.json --demo
	$(PY) scripts/bench_analyzer.py --locomo $(EVAL)/locomo-dev/locomo-dev.json --demo \
	  --config 'convex-theoretical-0.6={"fusion":"convex","normalization":"theoretical","default_dense_weight":0.6,"default_sparse_weight":0.4}'
	$(PY) scripts/bench_sparse_fts.py
	@echo "scripts/bench_scale.py --n 1000000 takes ~30 min and 4+ GB: run it by hand (see docs/BENCHMARKS.md)"
	@echo "scripts/bench_ray.py needs make install-ray and a private network namespace: run it by hand (see docs/BENCHMARKS.md)"
	$(PY) scripts/write_benchmarks.py

clean:
	rm -rf $(VENV) $(RAY_VENV) $(DB) .pytest_cache tests/artifacts
