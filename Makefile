# The two entry points of the README: `make run` and `make test`. Both install what is missing first.
BUILD ?= build
JOBS ?= $(shell nproc)
RANKS ?= 4

.PHONY: deps build run test test-sanitized clean

deps:
	@bash scripts/install_deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

run: build
	$(BUILD)/perf/all_reduce_perf --nprocs $(RANKS) -b 8 -e 64M -f 2

test: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS) --timeout 900

# The suite again under AddressSanitizer + UndefinedBehaviorSanitizer, and the threaded tests under ThreadSanitizer.
test-sanitized: deps
	@bash tests/sanitize/suite_under_sanitizers.sh . $(BUILD)

clean:
	rm -rf $(BUILD)
