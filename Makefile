# Thin wrapper over CMake: make demo | make check | make bench. Everything real lives in CMakeLists.txt.
BUILD_DIR ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
MAKEFLAGS += --no-print-directory
CMAKE_FLAGS ?=
APT_PACKAGES = cmake g++ make pkg-config libhwloc-dev libhwloc-plugins hwloc libopenmpi-dev openmpi-bin libcli11-dev \
               nlohmann-json3-dev libfmt-dev catch2 libtinyxml2-dev libnauty2-dev libbenchmark-dev groff-base clang-format clang-tidy git python3-jsonschema \
               libcurl4-openssl-dev libasio-dev libsqlite3-dev libsimdjson-dev

.PHONY: all deps configure build demo check bench lint clean format

all: build

deps:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" -eq 0 ]; then \
	    echo "installing:" $$missing; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	  else \
	    echo "missing packages; run as root:"; \
	    echo "  apt-get update && apt-get install -y --no-install-recommends $$missing"; \
	    exit 1; \
	  fi; \
	fi

configure: deps
	@cmake -S . -B $(BUILD_DIR) $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j$(JOBS)

demo: build
	@sh share/gpuops/demo.sh $(BUILD_DIR)

check: build
	@cd $(BUILD_DIR) && ctest --output-on-failure -j$(JOBS)

bench: build
	@sh tests/perf/report.sh $(BUILD_DIR)

# clang-tidy over the library and the tools (.clang-tidy), every warning an error; CI runs it after check.
lint: build
	@git ls-files 'lib/*.cpp' 'tools/*.cpp' | xargs -P$(JOBS) -n4 clang-tidy -p $(BUILD_DIR) --quiet --warnings-as-errors='*' 2>/dev/null \
	  && echo "clang-tidy: no warnings"

format:
	@git ls-files '*.cpp' '*.hpp' | xargs clang-format -i

clean:
	@rm -rf $(BUILD_DIR)
