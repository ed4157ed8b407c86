#!/usr/bin/env bash
# expect_exit.sh CODE REGEX [--stdout REGEX2] COMMAND...: runs COMMAND and
# passes when it exits with CODE and its standard error matches the extended
# regular expression REGEX (and, with --stdout, its standard output matches
# REGEX2). A crash (a signal, or a sanitizer's report) never passes.
set -u
code="$1"
regex="$2"
shift 2
out_regex=""
if [ "${1:-}" = "--stdout" ]; then
  out_regex="$2"
  shift 2
fi
err="$(mktemp)"
out="$(mktemp)"
"$@" >"$out" 2>"$err"
rc=$?
msg="$(cat "$err")"
stdout="$(cat "$out")"
rm -f "$err" "$out"
echo "exit $rc: $msg"
if [ "$rc" -ne "$code" ]; then
  echo "FAIL: expected exit $code"
  echo "$stdout"
  exit 1
fi
# With allocator_may_return_null=1 (the exit-4 test) AddressSanitizer warns
# that it refused an allocation: that is the behaviour under test, not a
# report of a bug.
if grep -vE "WARNING: AddressSanitizer failed to allocate" <<<"$msg" |
  grep -qE "AddressSanitizer|LeakSanitizer|runtime error:"; then
  echo "FAIL: sanitizer report"
  exit 1
fi
if ! grep -qE -- "$regex" <<<"$msg"; then
  echo "FAIL: message does not match: $regex"
  exit 1
fi
if [ -n "$out_regex" ] && ! grep -qE -- "$out_regex" <<<"$stdout"; then
  echo "FAIL: standard output does not match: $out_regex"
  echo "$stdout"
  exit 1
fi
