# The two entry points of the README: `make run` and `make test`. Both install what is missing first.
BUILD ?= build
JOBS ?= $(shell nproc)
RANKS ?= 4

VENV ?= .venv

.PHONY: deps python-env docs-env build build-python run docs test test-ecosystem test-soak test-sanitized clean

deps:
	@bash scripts/install_deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

run: build
	$(BUILD)/perf/all_reduce_perf --nprocs $(RANKS) -b 8 -e 64M -f 2

# The virtual environment of the Python package and its tests (torch, numpy, pytest, nanobind: scripts/python_env.sh).
python-env:
	@bash scripts/python_env.sh $(VENV)

# The library, its tools and tests, and the Python package with the torch.distributed backend.
build-python: deps python-env
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DCHORUS_PYTHON=ON -DPython_EXECUTABLE=$(abspath $(VENV))/bin/python >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

# The docs site into $(BUILD)/docs/html (Doxygen, then Sphinx from .venv-docs, warnings as errors: docs/build.sh).
docs-env:
	@bash scripts/python_env.sh .venv-docs docs/requirements.txt

docs: build docs-env
	@bash docs/build.sh $(BUILD) $(abspath .venv-docs)/bin/python

# The suite in tiers, each a ctest label (docs/testing.md: what each holds, its budget). `make test` runs the gate
# tiers; `make test-ecosystem` the third-party frameworks and the packaging; `make test-soak` the seeded random mix;
# `make test-sanitized` the sanitizer and fuzz runs. CI (.ci/run) runs all four. ctest prints each label's time last.
# gpu: device buffers, which skip with their reason where there is no GPU.
GATE_TIERS = unit|threads|processes|system|python|gpu
CTEST = cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

test: build-python docs-env
	@bash docs/build.sh $(BUILD) $(abspath .venv-docs)/bin/python
	$(CTEST) -L '^($(GATE_TIERS))$$'

test-ecosystem: build-python
	$(CTEST) -L '^(ecosystem|packaging)$$'

test-soak: build-python
	$(CTEST) -L '^soak$$'

# Unit, thread, process and soak tiers under AddressSanitizer + UndefinedBehaviorSanitizer, the thread tier under
# ThreadSanitizer (slow variants left out of both), then the fuzz targets.
test-sanitized: deps
	@bash tests/sanitize/suite_under_sanitizers.sh . $(BUILD)

clean:
	rm -rf $(BUILD)
