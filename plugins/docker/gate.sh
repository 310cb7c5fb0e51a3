#!/bin/sh
# dtkguard build-stage gate: `dtkguard check` of the image's Python against the policy, the
# guard's baseline (recorded by `dtkguard guard install`) and the lock, when there is one. A
# violation exits non-zero, so the `RUN` that calls this script fails the build. The log is
# short: no colour, one line a finding, check's summary line, and last the gate's line saying
# what it checked.
#
# Settings (environment; the Dockerfile passes them from build args):
#   DTKGUARD         dtkguard command (default: /opt/dtkguard/bin/dtkguard, else dtkguard on PATH)
#   DTKGUARD_PYTHON  the image's interpreter to check (default: python3)
#   DTKGUARD_ROOT    check an unpacked image root instead of an interpreter (tests, CI)
#   DTKGUARD_LOCK    a PEP 751 lock the environment must match (optional; default: pylock.toml
#                    beside this script when the build context had one, else none)
#   DTKGUARD_POLICY  policy file or bundled name (default: dtkguard's lookup)
#   DTKGUARD_FAIL_ON severity that fails the build (default: high)
# Exit: 0 clean, 1 violation, 2 bad input (policy, lock, arguments), 3 target unreadable.
set -u
export NO_COLOR=1

if [ -z "${DTKGUARD:-}" ]; then
    if [ -x /opt/dtkguard/bin/dtkguard ]; then DTKGUARD=/opt/dtkguard/bin/dtkguard; else DTKGUARD=dtkguard; fi
fi
if [ -n "${DTKGUARD_ROOT:-}" ]; then
    set -- --root "$DTKGUARD_ROOT" "$@"
else
    set -- --python "${DTKGUARD_PYTHON:-python3}" "$@"
fi
[ -n "${DTKGUARD_POLICY:-}" ] && set -- "$@" --policy "$DTKGUARD_POLICY"
if [ -z "${DTKGUARD_LOCK+set}" ] && [ -f "$(dirname "$0")/pylock.toml" ]; then
    DTKGUARD_LOCK="$(dirname "$0")/pylock.toml"
fi
[ -n "${DTKGUARD_LOCK:-}" ] && set -- "$@" --lock "$DTKGUARD_LOCK"

# $DTKGUARD is word-split on purpose: it may be "python3 -m dtkguard"
out=$($DTKGUARD check "$@" --format table --fail-on "${DTKGUARD_FAIL_ON:-high}")
rc=$?
[ -n "$out" ] && printf '%s\n' "$out"

# what was checked, for the gate's last line
policy=$(printf '%s\n' "$out" | sed -n 's/.* policy=\([^ ]*\).*/\1/p' | tail -n 1)
what="${DTKGUARD_ROOT:-${DTKGUARD_PYTHON:-python3}} against policy ${policy:-${DTKGUARD_POLICY:-?}}"
if [ -z "${DTKGUARD_ROOT:-}" ]; then
    base=$($DTKGUARD guard status --python "${DTKGUARD_PYTHON:-python3}" 2>/dev/null \
        | awk '$2 == "baseline" { print $1 }')
    if [ "$base" = present ]; then what="$what, the guard's baseline"; else what="$what, no guard baseline"; fi
fi
if [ -n "${DTKGUARD_LOCK:-}" ]; then what="$what and lock $DTKGUARD_LOCK"; else what="$what and no lock (drift not checked)"; fi

case $rc in
    0) echo "dtkguard gate: passed: checked $what" ;;
    1) echo "dtkguard gate: policy violation, build stopped (fix the findings above): checked $what" >&2 ;;
    *) echo "dtkguard gate: dtkguard could not check the image (exit $rc): $what" >&2 ;;
esac
exit $rc
