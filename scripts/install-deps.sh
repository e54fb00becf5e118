#!/usr/bin/env bash
# Installs everything sluice needs on Debian 12, and nothing twice.
# Used by `make serve`, `make test`, .ci/run and the Dockerfile alike.
#
#   scripts/install-deps.sh               build + test dependencies (default)
#   scripts/install-deps.sh --build-only  what building and fetching the model need (Dockerfile)
#   scripts/install-deps.sh --runtime     only the shared libraries the daemon loads
#   scripts/install-deps.sh --image       what `make image` / `make test-image` need
#                                         (podman, debootstrap, docker-compose), only those
#
# prometheus-cpp is not packaged for Debian 12. Debian 13's core library installs
# cleanly on 12, so we add Debian 13 as an apt source pinned at priority 1 (nothing
# is ever taken from it unless named), install the core library from it, and unpack
# the headers of its -dev package (whose dependency on the push library cannot be
# met on 12) into $SLUICE_DEPS_PREFIX, where CMake looks for them.
set -euo pipefail

mode=${1:-build}
prefix=${SLUICE_DEPS_PREFIX:-/opt/sluice-deps}
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"

build_pkgs=(
  build-essential cmake ninja-build ccache pkg-config git
  libboost1.81-dev libspdlog-dev nlohmann-json3-dev doctest-dev libcli11-dev
  python3 python3-venv curl libpcre2-dev
  libavcodec-dev libavformat-dev libavutil-dev libsonic-dev libsoxr-dev
  libzmq3-dev cppzmq-dev
)
# The end-to-end tests check the metrics with a real Prometheus and promtool, and
# the compose file with docker-compose. The fuzz targets (tests/fuzz/) need clang and
# libFuzzer's runtime, which clang only recommends (and we install no recommends),
# and llvm-symbolizer (llvm-14) for the source lines in a finding's stack.
# The audio tests decode what FFmpeg encodes with an independent reader, libsndfile.
test_pkgs=(prometheus docker-compose clang libclang-rt-14-dev llvm-14 libsndfile1-dev json-schema-test-suite)
# Speech audio is encoded by FFmpeg's libraries (MP3 through LAME, Opus through libopus),
# time-stretched by libsonic (speed without a pitch change) and resampled by libsoxr.
runtime_pkgs=(libspdlog1.10 libfmt9 libpcre2-8-0 libavcodec59 libavformat59 libavutil57 libsonic0 libsoxr0
  libzmq5 ca-certificates)

# `make image` builds the container image with podman (daemonless, root in this VM);
# runc (crun failed to start containers in this VM, issue 25); debootstrap makes the Debian base where no registry
# is reachable (scripts/make-base-image.sh); docker-compose drives the compose stacks
# through podman's Docker-compatible socket, whose containers find each other by
# name through the CNI dnsname plugin. None of it is on the default path.
image_pkgs=(podman runc golang-github-containernetworking-plugin-dnsname debootstrap docker-compose ca-certificates)

missing() {  # prints the packages of "$@" that are not installed
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "${p%%/*}" 2>/dev/null | grep -q 'ok installed' || echo "$p"
  done
}

apt_updated=0
apt_update() {
  [ "$apt_updated" -eq 1 ] && return
  $sudo apt-get update -qq
  apt_updated=1
}

add_trixie_source() {
  local list=/etc/apt/sources.list.d/sluice-trixie.sources
  [ -f "$list" ] && return
  # Reuse the mirror this machine already uses for Debian 12.
  local uri
  uri=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  if [ -z "$uri" ]; then
    uri=$(awk '$1 == "deb" && $3 ~ /^bookworm$/ {print $2; exit}' /etc/apt/sources.list)
  fi
  [ -n "$uri" ] || { echo "install-deps: cannot find the Debian mirror in apt's sources" >&2; exit 1; }
  printf 'Types: deb\nURIs: %s\nSuites: trixie\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "$uri" | $sudo tee "$list" >/dev/null
  printf 'Package: *\nPin: release n=trixie\nPin-Priority: 1\n' |
    $sudo tee /etc/apt/preferences.d/sluice-trixie >/dev/null
  apt_updated=0
}

install_prometheus_cpp() {
  local want_headers=$1
  local need_lib need_hdr=0
  need_lib=$(missing libprometheus-cpp-core1.0)
  [ "$want_headers" = 1 ] && [ ! -f "$prefix/include/prometheus/registry.h" ] && need_hdr=1
  [ -z "$need_lib" ] && [ "$need_hdr" = 0 ] && return
  add_trixie_source
  apt_update
  if [ -n "$need_lib" ]; then
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      libprometheus-cpp-core1.0/trixie
  fi
  if [ "$need_hdr" = 1 ]; then
    local tmp
    tmp=$(mktemp -d); chmod 755 "$tmp"
    (cd "$tmp" && apt-get download -qq prometheus-cpp-dev/trixie)
    $sudo mkdir -p "$prefix"
    dpkg-deb -x "$tmp"/prometheus-cpp-dev_*.deb "$tmp/x"
    $sudo cp -r "$tmp/x/usr/include" "$prefix/"
    rm -rf "$tmp"
  fi
}

# msgpack-cxx (KV-cache events) is header-only, but Debian 12's libmsgpack-cxx-dev
# depends on libboost-dev (1.74), which conflicts with the libboost1.81-dev we build
# with; sluice compiles it with MSGPACK_NO_BOOST, so only its headers are unpacked
# into $SLUICE_DEPS_PREFIX, as for prometheus-cpp.
install_msgpack_cxx_headers() {
  [ -f "$prefix/include/msgpack.hpp" ] && return
  apt_update
  local tmp
  tmp=$(mktemp -d); chmod 755 "$tmp"
  (cd "$tmp" && apt-get download -qq libmsgpack-cxx-dev)
  dpkg-deb -x "$tmp"/libmsgpack-cxx-dev_*.deb "$tmp/x"
  $sudo mkdir -p "$prefix/include"
  $sudo cp -r "$tmp/x/usr/include/." "$prefix/include/"
  rm -rf "$tmp"
}

case "$mode" in
  build)   pkgs=("${build_pkgs[@]}" "${test_pkgs[@]}" "${runtime_pkgs[@]}"); headers=1 ;;
  --build-only) pkgs=("${build_pkgs[@]}" "${runtime_pkgs[@]}"); headers=1 ;;
  --runtime) pkgs=("${runtime_pkgs[@]}"); headers=0 ;;
  --image) pkgs=("${image_pkgs[@]}"); headers=0 ;;
  *) echo "usage: $0 [--build-only | --runtime | --image]" >&2; exit 2 ;;
esac

todo=$(missing "${pkgs[@]}")
if [ -n "$todo" ]; then
  apt_update
  # shellcheck disable=SC2086
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $todo
fi
if [ "$mode" != --image ]; then
  install_prometheus_cpp "$headers"
  [ "$headers" = 1 ] && install_msgpack_cxx_headers
fi
echo "install-deps: ok ($mode)"
