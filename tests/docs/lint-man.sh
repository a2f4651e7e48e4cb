#!/usr/bin/env bash
# groff's own lint: a man page must format without warnings.
set -u
page=$1
warnings=$(LC_ALL=C.UTF-8 MANWIDTH=80 groff -man -ww -z -Tutf8 "$page" 2>&1)
if [ -n "$warnings" ]; then echo "$warnings"; exit 1; fi
exit 0
