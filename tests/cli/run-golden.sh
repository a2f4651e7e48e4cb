#!/usr/bin/env bash
# Runs one golden CLI case: tests/cli/<tool>/<case>/{cmd, [stdin], expected.stdout, [expected.stderr], [expected.exit]}.
# cmd is one shell line run in the case folder with the built tools first on PATH.
# UPDATE_GOLDEN=1 rewrites the expected files from the actual run instead of comparing.
set -u
case_dir=$1
bin_dir=$2
export PATH="$bin_dir:$PATH"
export LC_ALL=C
cd "$case_dir" || exit 2
stdin=/dev/null
[ -f stdin ] && stdin=stdin
actual_out=$(mktemp) actual_err=$(mktemp)
trap 'rm -f "$actual_out" "$actual_err"' EXIT
bash -c "$(cat cmd)" <"$stdin" >"$actual_out" 2>"$actual_err"
code=$?
if [ "${UPDATE_GOLDEN:-0}" = 1 ]; then
  cp "$actual_out" expected.stdout
  echo "$code" > expected.exit
  if [ -s "$actual_err" ] || [ -f expected.stderr ]; then cp "$actual_err" expected.stderr; fi
  echo "updated $case_dir"
  exit 0
fi
fail=0
want_code=0
[ -f expected.exit ] && want_code=$(cat expected.exit)
if [ "$code" != "$want_code" ]; then
  echo "exit code: expected $want_code, got $code"
  fail=1
fi
if ! diff -u expected.stdout "$actual_out"; then
  echo "stdout differs (UPDATE_GOLDEN=1 ctest -R '...' rewrites it)"
  fail=1
fi
if [ -f expected.stderr ] && ! diff -u expected.stderr "$actual_err"; then
  echo "stderr differs"
  fail=1
fi
[ "$fail" = 0 ] || { echo "--- stderr was:"; cat "$actual_err"; }
exit $fail
