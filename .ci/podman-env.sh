# shellcheck shell=bash
# Source this (`. .ci/podman-env.sh`) to get a working podman on a CI machine of
# this kind: Debian bookworm, root, no systemd, no Docker engine, hybrid cgroups,
# hard rlimits that cannot be raised. It
#   - installs podman, buildah and their helpers from Debian when one is missing;
#   - writes containers.conf and storage.conf under $PLANT_STORE_CONTAINERS_DIR
#     (default /var/tmp/plant-store-containers) and exports CONTAINERS_CONF and
#     CONTAINERS_STORAGE_CONF; nothing in /etc is changed.
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
}

plant_store_podman_env
