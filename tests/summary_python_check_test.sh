#!/usr/bin/env bash
# Out-of-language check: python3-protobuf, with modules compiled by protoc from our
# .proto files, reads the event files our SummaryWriter wrote (FORMATS.md 1-5).
set -euo pipefail

cd "${TEST_SRCDIR}/overseer"
out="${TEST_TMPDIR}/python_check"
mkdir -p "${out}/py" "${out}/run"

if ! /usr/bin/python3 -c 'import google.protobuf' 2>/dev/null; then
  echo "python3-protobuf is not installed (apt-get install python3-protobuf; ./dev installs it)" >&2
  exit 1
fi
protoc -I. --python_out="${out}/py" proto/*.proto
tests/write_sample_events "${out}/run"
PYTHONPATH="${out}/py" /usr/bin/python3 tests/read_events.py "${out}/run"
