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

.PHONY: all deps model test-models build venv serve test test-cpu-only test-sanitize fuzz-smoke tts-fixtures \
        image-deps image-base image test-image clean

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

$(VENV)/.installed: tests/e2e/requirements.txt tests/e2e/requirements-no-deps.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r tests/e2e/requirements.txt
	$(VENV)/bin/pip install --quiet --disable-pip-version-check --no-deps -r tests/e2e/requirements-no-deps.txt
	touch $@

venv: deps $(VENV)/.installed

serve: build model
	$(BUILD_DIR)/server/sluice serve --model $(MODEL) $(if $(GENERATION_CONFIG),--generation-config '$(GENERATION_CONFIG)') $(SERVE_ARGS)

# test-models fetched the real models: a test that finds one missing fails (not skips).
# E2E_BACKEND=cpu|cuda|cuda:N: the backend of the end-to-end daemons' models (default:
# auto, the first GPU when one is present). The unit and end-to-end suites run side
# by side (-j2), as under test-sanitize.
test: build test-models venv
	SLUICE_REQUIRE_MODELS=1 SLUICE_E2E_BACKEND=$(E2E_BACKEND) ctest --test-dir $(BUILD_DIR) --output-on-failure -j2

# The CPU-only build (the CMake default) must stay green whatever `make test` built:
# a second tree without CUDA, its unit tests run (ccache makes most of it free). CI
# does not run it: test-sanitize's tree is CPU-only too, and runs every test.
test-cpu-only: deps test-models
	cmake -S . -B build-cpu -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DSLUICE_CUDA=OFF $(CMAKE_ARGS)
	cmake --build build-cpu --target sluice sluice_unit_tests
	SLUICE_REQUIRE_MODELS=1 build-cpu/tests/sluice_unit_tests

# The unit and end-to-end tests again, on a CPU-only daemon built with AddressSanitizer
# and UndefinedBehaviorSanitizer (g++ runtimes), the two suites side by side (-j2: the
# end-to-end tests wait on their daemons much of the time; docs/testing.md has the
# figures). Any report fails the run: UBSan does
# not recover, ASan aborts, LeakSanitizer checks every process at exit. No report
# is suppressed: the whole suite runs clean.
# Four of UBSan's checks are left to ASan, which reports the same faults when they
# matter: `null` and `object-size` (the bad access itself), `pointer-overflow` (the
# access past the object), and `alignment` (no fault on x86; the clang fuzz tree still
# checks it in every parser). Without them the tree costs 0.74x the compile CPU
# (docs/testing.md).
SANITIZE_FLAGS := -fsanitize=address,undefined -fno-sanitize=null,object-size,pointer-overflow,alignment \
                  -fno-sanitize-recover=all -fno-omit-frame-pointer
# -O1 (what ASan's authors advise) and line tables only (-g1: the reports' stacks
# still name file and line): with -O2 -g this tree took 2.3x the CPU to build
# (test_config.cpp: 170 s vs 74 s), most of it UBSan's checks optimised at -O2 and
# full debug info.
SANITIZE_OPT   := -O1 -g1 -DNDEBUG
# With debug info ccache keys on the working folder unless it is mapped away: the
# map lets a clone in another folder (CI's) reuse the cache.
DEBUG_PREFIX_MAP := -fdebug-prefix-map=$(CURDIR)=/sluice
SANITIZE_ENV   := ASAN_OPTIONS=abort_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1 \
                  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
test-sanitize: deps test-models venv
	cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSLUICE_CUDA=OFF \
	  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$(SANITIZE_OPT)" \
	  -DCMAKE_CXX_FLAGS="$(SANITIZE_FLAGS) $(DEBUG_PREFIX_MAP)" -DCMAKE_EXE_LINKER_FLAGS="$(SANITIZE_FLAGS)" $(CMAKE_ARGS)
	cmake --build build-asan --target sluice sluice_unit_tests
	$(SANITIZE_ENV) ctest --test-dir build-asan --output-on-failure -j2

# The libFuzzer targets (tests/fuzz/: clang, ASan + UBSan), built in their own tree and
# run for FUZZ_SECONDS each, one per core at a time, on a copy of their committed seeds.
# Any finding fails; its reproducer stays under $(FUZZ_BUILD_DIR)/run/<target>/.
# FUZZ_TARGETS names some of them (default: all seven).
FUZZ_BUILD_DIR ?= build-fuzz
FUZZ_SECONDS   ?= 60
FUZZ_TARGETS   ?=
fuzz-smoke: deps
	cmake -S tests/fuzz -B $(FUZZ_BUILD_DIR) -G Ninja -DCMAKE_CXX_COMPILER=clang++
	cmake --build $(FUZZ_BUILD_DIR)
	bash tests/fuzz/run.sh $(FUZZ_BUILD_DIR) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# The Qwen3-TTS parity fixtures (tests/fixtures/qwen3_tts), regenerated by the official
# qwen-tts package in its own venv (created when absent; QWEN_TTS_PYTHON picks another).
QWEN_TTS_VENV   ?= .venv-qwen-tts
QWEN_TTS_PYTHON ?= $(QWEN_TTS_VENV)/bin/python
tts-fixtures:
	$(if $(filter $(QWEN_TTS_VENV)/bin/python,$(QWEN_TTS_PYTHON)),bash scripts/qwen-tts-reference-venv.sh $(QWEN_TTS_VENV))
	$(QWEN_TTS_PYTHON) tests/fixtures/qwen3_tts/make_fixtures.py

# --- The container image (opt-in: neither `make test` nor CI builds it) -------------
# `make image` builds the Dockerfile with podman, plus the two small images the compose
# files use where no registry is reachable: vllm-router (from PyPI) and Prometheus
# (Debian's package), all on one Debian 12 base. BASE_IMAGE defaults to a local
# debootstrap of bookworm made by scripts/make-base-image.sh from apt's mirror; where
# a registry is reachable, `make image BASE_IMAGE=docker.io/library/debian:12-slim`
# (BUILD_IMAGE/RUNTIME_IMAGE split the Dockerfile's two stages). --format docker keeps
# the HEALTHCHECK (podman's default OCI format drops it); --pull=never builds from
# local images only. A cold build takes 7.5-10.5 minutes (docs/deployment.md, "The container image").
# `make test-image` builds, then runs the image and both compose stacks on 127.0.0.1
# (scripts/test-image.sh says what it checks).
IMAGE             ?= localhost/sluice:latest
ROUTER_IMAGE      ?= localhost/sluice-vllm-router:0.1.17
PROMETHEUS_IMAGE  ?= localhost/sluice-prometheus:bookworm
BASE_IMAGE        ?= localhost/debian:12-minbase
BUILD_IMAGE       ?= $(BASE_IMAGE)
RUNTIME_IMAGE     ?= $(BASE_IMAGE)
# podman settings of these targets only (runc, a lower open-files limit): see the file.
export CONTAINERS_CONF ?= $(CURDIR)/scripts/podman-containers.conf
PODMAN_BUILD := podman build --format docker --pull=never

image-deps:
	bash scripts/install-deps.sh --image

image-base: image-deps
	podman image exists $(BASE_IMAGE) || \
	  { case "$(BASE_IMAGE)" in localhost/*) bash scripts/make-base-image.sh $(BASE_IMAGE) ;; \
	    *) podman pull $(BASE_IMAGE) ;; esac; }

image: image-base
	$(PODMAN_BUILD) --build-arg BUILD_IMAGE=$(BUILD_IMAGE) --build-arg RUNTIME_IMAGE=$(RUNTIME_IMAGE) \
	  -t $(IMAGE) -f Dockerfile .
	$(PODMAN_BUILD) --build-arg BASE_IMAGE=$(RUNTIME_IMAGE) -t $(ROUTER_IMAGE) deploy/images/vllm-router
	$(PODMAN_BUILD) --build-arg BASE_IMAGE=$(RUNTIME_IMAGE) -t $(PROMETHEUS_IMAGE) deploy/images/prometheus
	@podman image inspect --format '{{json .Config.Healthcheck}}' $(IMAGE) | grep -q '/ready' || \
	  { echo "make image: $(IMAGE) has no HEALTHCHECK on /ready (built as OCI?)" >&2; exit 1; }
	@echo "make image: $(IMAGE) $$(podman image inspect --format '{{.Size}}' $(IMAGE)) bytes, HEALTHCHECK kept"

test-image: image
	IMAGE=$(IMAGE) ROUTER_IMAGE=$(ROUTER_IMAGE) PROMETHEUS_IMAGE=$(PROMETHEUS_IMAGE) bash scripts/test-image.sh

clean:
	rm -rf $(BUILD_DIR) build-cpu build-asan $(FUZZ_BUILD_DIR)
