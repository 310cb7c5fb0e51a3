#!/bin/sh
# Stop the dockerd .ci/docker-up.sh started, and only that one, by its pid file. The images stay
# in $DTKGUARD_DOCKER_DIR for the next run on this machine.
set -u
DIR=${DTKGUARD_DOCKER_DIR:-/tmp/dtkguard-docker}
[ -f "$DIR/started" ] || { echo "docker-down: nothing started in $DIR"; exit 0; }
if grep -qx dockerd "$DIR/started" && [ -f "$DIR/dockerd.pid" ]; then
    pid=$(cat "$DIR/dockerd.pid")
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid"
        for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
        echo "docker-down: stopped dockerd (pid $pid)"
    fi
fi
rm -f "$DIR/started"
exit 0
