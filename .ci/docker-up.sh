#!/bin/sh
# Start a throwaway Docker engine on this host for the tests marked `docker`, and make the
# DAS-like base image they build on. Debian's docker.io and debootstrap are installed when absent.
#
#   .ci/docker-up.sh           # prints DOCKER_HOST=...; the tests read the same state directory
#   .ci/docker-down.sh         # stops only the dockerd this script started, by its pid file
#
# State (socket, pid file, log, images) lives in $DTKGUARD_DOCKER_DIR (default
# /tmp/dtkguard-docker); the system's /var/lib/docker and /var/run/docker.sock are not touched.
# The base image is made once, offline from the Debian mirror of this machine's apt sources
# (debootstrap --variant=minbase bookworm, then `docker import`), and kept in that directory, so
# later runs on the same machine reuse it. Must run as root.
set -eu

DIR=${DTKGUARD_DOCKER_DIR:-/tmp/dtkguard-docker}
BASE=${DTKGUARD_DOCKER_BASE:-dtkguard-ci/bookworm-python:1}
SOCK="$DIR/docker.sock"
export DOCKER_HOST="unix://$SOCK"

if [ "$(id -u)" != 0 ]; then
    echo "docker-up: must run as root" >&2
    exit 2
fi

if ! command -v dockerd >/dev/null || ! command -v debootstrap >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y --no-install-recommends docker.io debootstrap
fi
# Debian's client; a docker binary earlier on PATH may be of another version
DOCKER=/usr/bin/docker
[ -x "$DOCKER" ] || DOCKER=docker

mkdir -p "$DIR"
if [ -e "$DIR/dockerd.pid" ] && kill -0 "$(cat "$DIR/dockerd.pid")" 2>/dev/null; then
    echo "docker-up: dockerd already running (pid $(cat "$DIR/dockerd.pid"))"
else
    : > "$DIR/started"
    dockerd --host "$DOCKER_HOST" --data-root "$DIR/data" --exec-root "$DIR/exec" \
        --pidfile "$DIR/dockerd.pid" >"$DIR/dockerd.log" 2>&1 &
    echo dockerd >> "$DIR/started"
    for _ in $(seq 1 120); do
        "$DOCKER" version >/dev/null 2>&1 && break
        sleep 0.5
    done
    if ! "$DOCKER" version >/dev/null 2>&1; then
        echo "docker-up: dockerd did not come up:" >&2
        tail -n 30 "$DIR/dockerd.log" >&2
        exit 1
    fi
fi

# The base image: Debian bookworm with python3, venv and pip, from this machine's Debian mirror.
if ! "$DOCKER" image inspect "$BASE" >/dev/null 2>&1; then
    mirror=$(grep -rhE '^(URIs:|deb)[[:space:]]+[^[:space:]]*/debian/?([[:space:]]|$)' \
        /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null | awk '{print $2}' | head -n 1)
    mirror=${DTKGUARD_DEBIAN_MIRROR:-${mirror:-}}
    if [ -z "$mirror" ]; then
        echo "docker-up: no Debian mirror in the apt sources (set DTKGUARD_DEBIAN_MIRROR)" >&2
        exit 1
    fi
    rootfs="$DIR/rootfs"
    rm -rf "$rootfs"
    echo "docker-up: debootstrap bookworm from $mirror (once per machine)"
    debootstrap --variant=minbase --include=python3,python3-venv,python3-pip \
        bookworm "$rootfs" "$mirror" >"$DIR/debootstrap.log" 2>&1 || {
        tail -n 30 "$DIR/debootstrap.log" >&2
        exit 1
    }
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    tar -C "$rootfs" -c . | "$DOCKER" import - "$BASE" >/dev/null
    rm -rf "$rootfs"
fi
echo "docker-up: base image $BASE ready; DOCKER_HOST=$DOCKER_HOST"
