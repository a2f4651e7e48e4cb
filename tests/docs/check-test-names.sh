#!/usr/bin/env bash
# ctest learns the unit tests' names from Catch2 (catch_discover_tests), and CMake splits a name at ';' as it
# splits any list: the fragments become tests that select nothing and pass. No test name may hold a ';'.
set -u
cd "$1" || exit 2
bad=$(grep -rnE 'TEST_CASE\("[^"]*;' tests/unit)
[ -z "$bad" ] && exit 0
echo "test names with ';' (ctest would split them into tests that run nothing):"
echo "$bad"
exit 1
