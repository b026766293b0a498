# shellcheck shell=bash
# Source this (`. .ci/podman-env.sh`) to get a working podman on a CI machine of
# this kind: Debian bookworm, root, no systemd, no Docker engine, hybrid cgroups,
# hard rlimits that cannot be raised. It
#   - installs podman, buildah and their helpers from Debian when one is missing;
#   - writes containers.conf and storage.conf under $PLANT_STORE_CONTAINERS_DIR
#     (default /var/tmp/plant-store-containers) and exports CONTAINERS_CONF and
#     CONTAINERS_STORAGE_CONF; nothing in /etc is changed;
#   - exports PODMAN_BUILD_OPTIONS, extra `podman build` options this machine
#     needs (test/helpers/podman.ts adds them to its builds): outbound TLS from
#     build containers is intercepted here, so npm inside a build needs the
#     host's CA bundle. A directory holding it and an npmrc naming it is mounted
#     read-only at /usr/local/etc, npm's global configuration directory in the
#     Node images ($PREFIX/etc/npmrc); a build volume is in no layer of the image.
# Idempotent and quiet; a second run does no apt work and rewrites nothing.
#
# Why each setting (containers.conf(5), containers-storage.conf(5)):
#   runtime = "runc"       crun refuses hybrid cgroup hosts ("cgroups in hybrid
#                          mode not supported"), even with --cgroups=disabled.
#   default_ulimits        podman's default asks for a higher hard RLIMIT_NOFILE
#                          than the host allows; even root cannot raise it here.
#   cgroup_manager, events_logger
#                          no systemd: cgroupfs, and events to a file.
#   network_backend        netavark, named: without it podman 4.3 also probes
#                          the CNI file Debian ships, whose plugins are absent.

plant_store_podman_env() {
  local dir="${PLANT_STORE_CONTAINERS_DIR:-/var/tmp/plant-store-containers}"
  local packages="podman buildah runc conmon netavark aardvark-dns iptables slirp4netns fuse-overlayfs debootstrap"
  local missing="" package
  for package in $packages; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'ok installed' || missing="$missing $package"
  done
  if [ -n "$missing" ]; then
    echo "podman-env: installing$missing" >&2
    local log
    log="$(mktemp)"
    # shellcheck disable=SC2086 # word splitting of the package list is intended
    if ! { DEBIAN_FRONTEND=noninteractive timeout 600 apt-get update -qq \
        && DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq --no-install-recommends $missing; } >"$log" 2>&1; then
      cat "$log" >&2
      rm -f "$log"
      return 1
    fi
    rm -f "$log"
  fi

  local nofile
  nofile="$(ulimit -Hn)"
  [ "$nofile" = unlimited ] && nofile=1048576
  mkdir -p "$dir/storage" "$dir/run" "$dir/tmp" || return 1
  local containers_conf storage_conf
  containers_conf="[containers]
default_ulimits = [\"nofile=$nofile:$nofile\", \"nproc=32768:32768\"]

[engine]
runtime = \"runc\"
cgroup_manager = \"cgroupfs\"
events_logger = \"file\"
events_logfile_path = \"$dir/events.log\"
tmp_dir = \"$dir/tmp\"

[network]
network_backend = \"netavark\"
"
  storage_conf="[storage]
driver = \"overlay\"
graphroot = \"$dir/storage\"
runroot = \"$dir/run\"
"
  # Rewrite only on change: podman reads these on every call, and a changed
  # storage.conf under existing storage would be a different store.
  [ "$(cat "$dir/containers.conf" 2>/dev/null)" = "${containers_conf%$'\n'}" ] || printf %s "$containers_conf" >"$dir/containers.conf"
  [ "$(cat "$dir/storage.conf" 2>/dev/null)" = "${storage_conf%$'\n'}" ] || printf %s "$storage_conf" >"$dir/storage.conf"
  export CONTAINERS_CONF="$dir/containers.conf" CONTAINERS_STORAGE_CONF="$dir/storage.conf"

  local bundle=/etc/ssl/certs/ca-certificates.crt npm_config="$dir/build-npm-config"
  if [ -s "$bundle" ]; then
    mkdir -p "$npm_config" || return 1
    cmp -s "$bundle" "$npm_config/ca-certificates.crt" || cp "$bundle" "$npm_config/ca-certificates.crt" || return 1
    [ "$(cat "$npm_config/npmrc" 2>/dev/null)" = cafile=/usr/local/etc/ca-certificates.crt ] \
      || echo cafile=/usr/local/etc/ca-certificates.crt >"$npm_config/npmrc" || return 1
    export PODMAN_BUILD_OPTIONS="--volume=$npm_config:/usr/local/etc:ro"
  fi
}

plant_store_podman_env
