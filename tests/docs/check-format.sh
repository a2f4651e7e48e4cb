#!/usr/bin/env bash
# Formatting is mechanical: every C++ file must already be what clang-format (14, Debian 12) makes of it.
set -u
cd "$1" || exit 2
command -v clang-format >/dev/null || { echo "skipped: clang-format not installed"; exit 77; }
files=$(git ls-files '*.cpp' '*.hpp' 2>/dev/null || find lib tools tests -name '*.cpp' -o -name '*.hpp')
# shellcheck disable=SC2086
clang-format --dry-run --Werror $files
