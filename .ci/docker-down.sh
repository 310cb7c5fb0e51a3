#!/bin/sh
# Stop the dockerd .ci/docker-up.sh started, and only that one, by its pid file. The images stay
# in $DTKGUARD_DOCKER_DIR for the next run on this machine.
set -u
DIR=${DTKGUARD_DOCKER_DIR:-/tmp/dtkguard-docker}
[ -f "$DIR/started" ] || { echo "docker-down: nothing started in $DIR"; exit 0; }
grep -qx dockerd "$DIR/started" && sh "$(dirname "$0")/stop-pidfile.sh" dockerd "$DIR/dockerd.pid"
rm -f "$DIR/started"
exit 0
