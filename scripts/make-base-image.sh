#!/usr/bin/env bash
# Makes a local Debian 12 base image for the Dockerfile where no container registry
# is reachable (only apt's mirror is): debootstrap's minbase variant of bookworm,
# with this machine's apt sources, apt network settings, pip config and CA
# certificates copied in (so that apt and pip inside the build reach the same
# mirrors through the same proxy as the host does), imported into podman.
#
#   scripts/make-base-image.sh [TAG]     default TAG: localhost/debian:12-minbase
#
# Needs root, debootstrap and podman (`make image` installs them). Takes 2-4 minutes
# and about 130 MB. Does nothing when TAG already exists; FORCE=1 remakes it.
# Where a registry is reachable, skip this: `make image BASE_IMAGE=debian:12`.
set -euo pipefail

tag=${1:-localhost/debian:12-minbase}
suite=bookworm

if [ "${FORCE:-0}" != 1 ] && podman image exists "$tag"; then
  echo "make-base-image: $tag exists (FORCE=1 remakes it)"
  exit 0
fi
[ "$(id -u)" -eq 0 ] || { echo "make-base-image: debootstrap needs root" >&2; exit 1; }

# The mirror apt already uses for bookworm: deb822 first, then the one-line format.
mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
if [ -z "$mirror" ] && [ -f /etc/apt/sources.list ]; then
  mirror=$(awk '$1 == "deb" && $3 == "bookworm" {print $2; exit}' /etc/apt/sources.list)
fi
[ -n "$mirror" ] || { echo "make-base-image: no bookworm mirror in apt's sources" >&2; exit 1; }

root=$(mktemp -d /var/tmp/sluice-base.XXXXXX)
trap 'rm -rf "$root"' EXIT
echo "make-base-image: debootstrap --variant=minbase $suite from $mirror"
debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$root.log" 2>&1 ||
  { tail -20 "$root.log" >&2; rm -f "$root.log"; exit 1; }
rm -f "$root.log"

# apt: the host's Debian sources (not its other lists: a third-party source or
# Debian 13 without its pin would change what the image installs) and the apt.conf.d
# files that carry network settings (proxies, snapshot validity).
rm -f "$root/etc/apt/sources.list"
for f in /etc/apt/sources.list /etc/apt/sources.list.d/debian.sources; do
  [ -f "$f" ] && install -D -m 644 "$f" "$root$f"
done
for f in /etc/apt/apt.conf.d/*; do
  grep -q '^[[:space:]]*Acquire::' "$f" 2>/dev/null && install -m 644 "$f" "$root/etc/apt/apt.conf.d/"
done
[ -f /etc/pip.conf ] && install -m 644 /etc/pip.conf "$root/etc/pip.conf"
# CA certificates: the host's bundle as is (apt, curl and pip read it before the
# ca-certificates package exists), and its local CAs where update-ca-certificates
# finds them again once that package is installed in the image.
install -D -m 644 /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
if compgen -G "/usr/local/share/ca-certificates/*" >/dev/null; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp -r /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
fi

# What the official image also leaves out: downloaded packages and package lists.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/tmp/* "$root"/var/log/*.log

echo "make-base-image: importing as $tag"
tar --numeric-owner -C "$root" -c . |
  podman import --quiet --change 'CMD ["bash"]' --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' --change 'ENV LANG=C.UTF-8' - "$tag" >/dev/null
podman image inspect --format '{{.Id}} {{.Size}}' "$tag"
echo "make-base-image: ok ($tag)"
