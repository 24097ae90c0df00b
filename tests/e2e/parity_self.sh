#!/bin/sh
# SPDX-License-Identifier: MIT
# parity_self.sh — make check's run of tests/e2e/parity.sh: the cpu backend against itself on the tiny
# toy must be identical, a changed seed must be found, and a device-less backend must SKIP.
exec "$(dirname "$0")/parity.sh" --self-test -t 1
