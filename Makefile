# The two commands a newcomer needs, on a fresh Debian 12 machine:
#   make serve   install what is missing, fetch the default model, build Release, start the daemon
#   make test    install what is missing, build, run every test (unit + end-to-end)

BUILD_DIR  ?= build
BUILD_TYPE ?= Release
DEFAULT_MODEL := models/SmolLM2-135M-Instruct.Q4_1.gguf
MODEL      ?= $(DEFAULT_MODEL)
# Server-side sampling defaults for requests that leave the fields out. The default
# model's GGUF carries no general.sampling.* keys, and at OpenAI's temperature 1.0 a
# 135M model rambles; its model card samples at temperature 0.2, top_p 0.9.
SMOLLM2_SAMPLING := {"temperature": 0.2, "top_p": 0.9}
GENERATION_CONFIG ?= $(if $(filter $(DEFAULT_MODEL),$(MODEL)),$(SMOLLM2_SAMPLING))
SERVE_ARGS ?=
VENV       := .venv
CMAKE_ARGS ?=
# The CUDA backend is built whenever the toolkit is installed (nvcc at its usual
# place or on PATH); it picks a GPU at run time only when one is there. CUDA=OFF
# builds the CPU-only binary.
CUDA       ?= $(if $(or $(wildcard /usr/local/cuda/bin/nvcc),$(shell command -v nvcc 2>/dev/null)),ON,OFF)
# ccache keys on paths relative to the checkout, so clones in other folders hit the cache.
export CCACHE_BASEDIR := $(CURDIR)

.PHONY: all deps model test-models build venv serve test test-cpu-only test-sanitize clean

all: build

deps:
	bash scripts/install-deps.sh

model:
	bash scripts/fetch-model.sh models

# The tests also run Gemma 3 270M (k-quants, SentencePiece tokenizer).
test-models:
	bash scripts/fetch-model.sh --model all models

build: deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DSLUICE_CUDA=$(CUDA) $(CMAKE_ARGS)
	cmake --build $(BUILD_DIR)

$(VENV)/.installed: tests/e2e/requirements.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r tests/e2e/requirements.txt
	touch $@

venv: deps $(VENV)/.installed

serve: build model
	$(BUILD_DIR)/server/sluice serve --model $(MODEL) $(if $(GENERATION_CONFIG),--generation-config '$(GENERATION_CONFIG)') $(SERVE_ARGS)

# test-models fetched the real models: a test that finds one missing fails (not skips).
test: build test-models venv
	SLUICE_REQUIRE_MODELS=1 ctest --test-dir $(BUILD_DIR) --output-on-failure

# The CPU-only build (the CMake default) must stay green whatever `make test` built:
# a second tree without CUDA, its unit tests run (ccache makes most of it free).
test-cpu-only: deps test-models
	cmake -S . -B build-cpu -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DSLUICE_CUDA=OFF $(CMAKE_ARGS)
	cmake --build build-cpu --target sluice sluice_unit_tests
	SLUICE_REQUIRE_MODELS=1 build-cpu/tests/sluice_unit_tests

# The unit and end-to-end tests again, on a CPU-only daemon built with AddressSanitizer
# and UndefinedBehaviorSanitizer (g++ runtimes). Any report fails the run: UBSan does
# not recover, ASan aborts, LeakSanitizer checks every process at exit. No report
# is suppressed: the whole suite runs clean.
SANITIZE_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
SANITIZE_ENV   := ASAN_OPTIONS=abort_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1 \
                  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
test-sanitize: deps test-models venv
	cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSLUICE_CUDA=OFF \
	  -DCMAKE_CXX_FLAGS="$(SANITIZE_FLAGS)" -DCMAKE_EXE_LINKER_FLAGS="$(SANITIZE_FLAGS)" $(CMAKE_ARGS)
	cmake --build build-asan --target sluice sluice_unit_tests
	$(SANITIZE_ENV) ctest --test-dir build-asan --output-on-failure

clean:
	rm -rf $(BUILD_DIR) build-cpu build-asan
