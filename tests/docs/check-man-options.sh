#!/usr/bin/env bash
# Every option that `<tool> [subcommand] --help` lists must appear in its man page and its bash completion,
# and the man page must carry the tool's version.
set -u
tool=$1 page=$2 completion=$3 subcommand=${4:-}
# Only the option column: lines that start with whitespace and a dash (CLI11's layout), not words in the text.
# shellcheck disable=SC2086
options=$("$tool" $subcommand --help | grep -oE -- '^ +(-[a-zA-Z], ?)?--[a-z][a-z0-9-]*' | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)
[ -n "$options" ] || { echo "no options found in $tool $subcommand --help"; exit 1; }
fail=0
for opt in $options; do
  # man pages escape hyphens as \-
  escaped=$(printf '%s' "$opt" | sed 's/-/\\\\-/g')
  if ! grep -q -- "$escaped" "$page"; then echo "$(basename "$page"): missing $opt"; fail=1; fi
  if ! grep -qw -- "$opt" "$completion"; then echo "$(basename "$completion") completion: missing $opt"; fail=1; fi
done
version=$("$tool" --version | awk '{print $2}')
if ! grep -q "^\.TH .*\"gpuops $version\"" "$page"; then echo "$(basename "$page"): .TH does not say gpuops $version"; fail=1; fi
exit $fail
