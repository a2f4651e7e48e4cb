#!/usr/bin/env bash
# Every long option that `<tool> --help` lists must appear in its man page and its bash completion.
set -u
tool=$1 page=$2 completion=$3
options=$("$tool" --help | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)
[ -n "$options" ] || { echo "no options found in $tool --help"; exit 1; }
fail=0
for opt in $options; do
  # man pages escape hyphens as \-
  escaped=$(printf '%s' "$opt" | sed 's/-/\\\\-/g')
  if ! grep -q -- "$escaped" "$page"; then echo "$(basename "$page"): missing $opt"; fail=1; fi
  if ! grep -qw -- "$opt" "$completion"; then echo "$(basename "$completion") completion: missing $opt"; fail=1; fi
done
exit $fail
