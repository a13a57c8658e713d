#!/usr/bin/env bash
# Prepare this machine for the molecule scenarios and build their container image. Idempotent:
# every step is skipped when its result is already there, so it is cheap to run before each test.
#
#   1. apt packages: podman runc netavark aardvark-dns iptables debootstrap (installed if missing)
#   2. /etc/containers/containers.conf: runtime runc, no default ulimits (rewritten only if it
#      differs): the default runtime crun refuses hybrid cgroup hosts, and podman's default
#      ulimits cannot be raised without CAP_SYS_RESOURCE.
#   3. the image localhost/debian-ansible:12: a Debian 12 root filesystem with systemd, sshd,
#      python3 and sudo made by debootstrap, with apt's package lists, and imported with `podman
#      import`; nothing is pulled from a registry. An image older than a day is refreshed by the
#      scenarios' prepare (apt's cache_valid_time). Skipped when the image exists. The root filesystem tarball is cached under
#      .cache/ so that a rebuild (e.g. after `podman system reset`) takes seconds.
#
# Must run as root (apt, /etc, rootful podman). Options (environment):
#   MOLECULE_IMAGE   image name to build (default localhost/debian-ansible:12)
#   DEBIAN_MIRROR    mirror for debootstrap (default http://deb.debian.org/debian)
#   REBUILD=1        rebuild the image and the cached root filesystem
#   SKIP_APT=1       do not install system packages (they must be present)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

IMAGE="${MOLECULE_IMAGE:-localhost/debian-ansible:12}"
SUITE=bookworm
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# What every scenario needs in the image. Roles install their own packages with apt inside the
# containers (Debian's mirror is reachable from them), so this list stays minimal.
INCLUDE="python3,python3-apt,openssh-server,openssh-client,sudo,iproute2,systemd,systemd-sysv,ca-certificates,procps,netcat-openbsd,gnupg"
HOST_PACKAGES=(podman runc netavark aardvark-dns iptables debootstrap)
CACHE_DIR="$ROOT/.cache/test-image"
# The cache key covers everything that changes the root filesystem.
# IMAGE_REVISION: raise it when the build steps below change.
IMAGE_REVISION=3
KEY="$(printf '%s\n' "$IMAGE_REVISION" "$SUITE" "$MIRROR" "$INCLUDE" | sha256sum | cut -c1-12)"
TARBALL="$CACHE_DIR/debian-$SUITE-$KEY.tar"

log() { printf '[test-image] %s\n' "$*"; }
die() { printf '[test-image] ERROR: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "run as root: it installs packages, writes /etc/containers and uses rootful podman"

# One build at a time on this machine (several checkouts may share it).
mkdir -p "$CACHE_DIR"
exec 9>"$CACHE_DIR/.lock"
flock 9

# 1. System packages
if [ "${SKIP_APT:-0}" != 1 ]; then
    missing=()
    for pkg in "${HOST_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
    done
    if [ "${#missing[@]}" -gt 0 ]; then
        log "apt-get install ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq "${missing[@]}" >/dev/null
    else
        log "system packages present: ${HOST_PACKAGES[*]}"
    fi
fi
command -v podman >/dev/null || die "podman not found (install: apt-get install ${HOST_PACKAGES[*]})"

# 2. containers.conf
CONF=/etc/containers/containers.conf
WANT_CONF='# Written by xuanwu.cluster scripts/build-test-image.sh.
# runc: the default runtime crun refuses hosts in hybrid cgroup mode.
# default_ulimits = []: raising RLIMIT_NOFILE/NPROC needs CAP_SYS_RESOURCE, which a nested host lacks.
# netavark (with aardvark-dns): containers on one network find each other by name.
[containers]
default_ulimits = []

[engine]
runtime = "runc"

[network]
network_backend = "netavark"'
if [ -f "$CONF" ] && [ "$(cat "$CONF")" = "$WANT_CONF" ]; then
    log "$CONF up to date"
else
    if [ -f "$CONF" ]; then
        cp -p "$CONF" "$CONF.bak.$(date +%Y%m%d%H%M%S)"
        log "$CONF differs: rewritten (previous copy kept as $CONF.bak.*)"
    else
        log "writing $CONF"
    fi
    mkdir -p "$(dirname "$CONF")"
    printf '%s\n' "$WANT_CONF" > "$CONF"
fi

# 3. The image
# The image carries the cache key as a label: an image built by another revision of this script
# is rebuilt.
LABEL=org.xuanwu-cluster.test-image
if [ "${REBUILD:-0}" != 1 ] && podman image exists "$IMAGE"; then
    have="$(podman image inspect --format "{{index .Config.Labels \"$LABEL\"}}" "$IMAGE" 2>/dev/null || true)"
    if [ "$have" = "$KEY" ]; then
        log "image $IMAGE is up to date ($(podman image inspect --format '{{.Created}}' "$IMAGE" | cut -d. -f1)); REBUILD=1 to rebuild"
        exit 0
    fi
    log "image $IMAGE was built by another revision of this script (${have:-no label}, want $KEY): rebuilding"
fi

start=$(date +%s)
if [ "${REBUILD:-0}" = 1 ] || [ ! -s "$TARBALL" ]; then
    rootfs="$(mktemp -d "$CACHE_DIR/rootfs.XXXXXX")"
    trap 'rm -rf "$rootfs" "$TARBALL.part"' EXIT
    log "debootstrap $SUITE from $MIRROR (about a minute)"
    debootstrap --variant=minbase --include="$INCLUDE" "$SUITE" "$rootfs" "$MIRROR" >"$CACHE_DIR/debootstrap.log" 2>&1 \
        || { tail -20 "$CACHE_DIR/debootstrap.log" >&2; die "debootstrap failed (log: .cache/test-image/debootstrap.log)"; }
    # Same sources as a Debian 12 installation, so roles can apt-get install updates too.
    cat > "$rootfs/etc/apt/sources.list" <<EOF
deb $MIRROR $SUITE main
deb $MIRROR $SUITE-updates main
deb http://security.debian.org/debian-security $SUITE-security main
EOF
    # apt's package lists of those sources, read once here rather than in every container of every scenario
    # (molecule/shared/prepare.yml refreshes them only when they are older than its cache_valid_time, and the
    # roles' own `apt: update_cache` with a cache_valid_time then find them fresh, as after a refresh).
    chroot "$rootfs" apt-get update -qq >>"$CACHE_DIR/debootstrap.log" 2>&1 \
        || { tail -20 "$CACHE_DIR/debootstrap.log" >&2; die "apt-get update in the new root filesystem failed (log: .cache/test-image/debootstrap.log)"; }
    # Smaller image: no downloaded packages, no logs.
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/log/*.log
    # An empty machine-id: systemd makes a distinct one in each container at boot.
    : > "$rootfs/etc/machine-id"
    tar -C "$rootfs" --numeric-owner -cf "$TARBALL.part" .
    mv "$TARBALL.part" "$TARBALL"
    rm -rf "$rootfs"
    trap - EXIT
    # Keep only the current tarball.
    find "$CACHE_DIR" -maxdepth 1 -name 'debian-*.tar' ! -name "$(basename "$TARBALL")" -delete
else
    log "using cached root filesystem .cache/test-image/$(basename "$TARBALL")"
fi

old_id="$(podman image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null || true)"
log "podman import -> $IMAGE"
podman import --quiet --change 'CMD ["/sbin/init"]' --change 'STOPSIGNAL SIGRTMIN+3' --change "LABEL $LABEL=$KEY" \
    "$TARBALL" "$IMAGE" >/dev/null
log "image $IMAGE built in $(( $(date +%s) - start ))s ($(podman image inspect --format '{{.Size}}' "$IMAGE" | awk '{printf "%.0f MB", $1/1e6}'))"
# The image it replaces, unless a container still uses it.
if [ -n "$old_id" ] && [ "$old_id" != "$(podman image inspect --format '{{.Id}}' "$IMAGE")" ]; then
    podman rmi "$old_id" >/dev/null 2>&1 || true
fi
