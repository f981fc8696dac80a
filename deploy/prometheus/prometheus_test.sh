#!/usr/bin/env bash
# promtool on the Prometheus configuration: both scrape configurations, the alert
# rules and their unit tests. Needs Debian's prometheus package (./dev installs it).
set -euo pipefail
cd "${TEST_SRCDIR:-$PWD}/${TEST_WORKSPACE:-overseer}/deploy/prometheus" 2>/dev/null \
  || cd "$(dirname "$0")"
if ! command -v promtool >/dev/null; then
  echo "promtool is missing: apt-get install prometheus (./dev test installs it)" >&2
  exit 1
fi
promtool check config prometheus.yml
promtool check rules rules/*.yml
(cd tests && promtool test rules *.test.yml)
