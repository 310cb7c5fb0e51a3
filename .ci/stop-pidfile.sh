#!/bin/sh
# Stop one daemon by its pid file: TERM, up to 15 s, then KILL; remove the pid file.
#   .ci/stop-pidfile.sh NAME PIDFILE
set -u
[ -f "$2" ] || exit 0
pid=$(cat "$2")
if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
    echo "stopped $1 (pid $pid)"
fi
rm -f "$2"
