# The two commands of the README: `make fuzz` and `make test`. Each installs
# what is missing (Debian packages), configures, builds, then runs.
BUILD ?= build
JOBS ?= $(shell nproc)
CASES ?= 20000
SEED ?= 1
FUZZ_ARGS ?=

.PHONY: deps configure build fuzz test bench clean

deps:
	./scripts/install-deps.sh

configure: deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release

build: configure
	cmake --build $(BUILD) -j $(JOBS)

fuzz: build
	$(BUILD)/sdpacheck fuzz --cases $(CASES) --seed $(SEED) --corpus corpus --run-dir runs/latest \
	  --html runs/latest/report --junit runs/latest/junit.xml $(FUZZ_ARGS)

test: build
	cd $(BUILD) && ctest --output-on-failure --timeout 600 -j $(JOBS)

bench: build
	$(BUILD)/bench/throughput

clean:
	rm -rf $(BUILD)
