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
# The Grafana dashboard's queries parse (as recording rules).
rules="${TEST_TMPDIR:-/tmp}/dashboard-rules.yml"
python3 - ../grafana/overseer-dashboard.json "$rules" <<'PY'
import json, sys
dashboard = json.load(open(sys.argv[1]))
exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
with open(sys.argv[2], "w") as out:
    out.write("groups:\n  - name: dashboard\n    rules:\n")
    for i, expr in enumerate(exprs):
        out.write(f"      - record: dashboard:query{i}\n        expr: {json.dumps(expr)}\n")
PY
promtool check rules "$rules"
