#!/usr/bin/env bash
# expect_exit.sh CODE REGEX COMMAND...: runs COMMAND and passes when it exits
# with CODE and its standard error matches the extended regular expression
# REGEX. A crash (a signal, or a sanitizer's report) never passes.
set -u
code="$1"
regex="$2"
shift 2
err="$(mktemp)"
"$@" >/dev/null 2>"$err"
rc=$?
msg="$(cat "$err")"
rm -f "$err"
echo "exit $rc: $msg"
if [ "$rc" -ne "$code" ]; then
  echo "FAIL: expected exit $code"
  exit 1
fi
if grep -qE "AddressSanitizer|LeakSanitizer|runtime error:" <<<"$msg"; then
  echo "FAIL: sanitizer report"
  exit 1
fi
if ! grep -qE -- "$regex" <<<"$msg"; then
  echo "FAIL: message does not match: $regex"
  exit 1
fi
