#!/bin/sh
# dtkguard build-stage gate: `dtkguard check` of the image's Python against the policy (and the
# lock, when given). A violation exits non-zero, so the `RUN` that calls this script fails the
# build. The log is short: no colour, one line a finding, one summary line.
#
# Settings (environment; the Dockerfile passes them from build args):
#   DTKGUARD         dtkguard command (default: /opt/dtkguard/bin/dtkguard, else dtkguard on PATH)
#   DTKGUARD_PYTHON  the image's interpreter to check (default: python3)
#   DTKGUARD_ROOT    check an unpacked image root instead of an interpreter (tests, CI)
#   DTKGUARD_LOCK    a PEP 751 lock the environment must match (optional)
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
[ -n "${DTKGUARD_LOCK:-}" ] && set -- "$@" --lock "$DTKGUARD_LOCK"

# $DTKGUARD is word-split on purpose: it may be "python3 -m dtkguard"
$DTKGUARD check "$@" --format table --fail-on "${DTKGUARD_FAIL_ON:-high}"
rc=$?
case $rc in
    0) ;;
    1) echo "dtkguard gate: policy violation, build stopped (fix the findings above)" >&2 ;;
    *) echo "dtkguard gate: dtkguard could not check the image (exit $rc)" >&2 ;;
esac
exit $rc
