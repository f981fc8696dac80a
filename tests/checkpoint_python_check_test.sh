#!/usr/bin/env bash
# Out-of-language check: python3 reads the .index LevelDB table of a checkpoint our
# CheckpointStore wrote (its own table parser and CRC32C), decodes BundleHeaderProto and
# BundleEntryProto with python3-protobuf modules compiled by protoc from our .proto
# files, and checks every tensor's bytes (docs/checkpoint_format.md).
set -euo pipefail

cd "${TEST_SRCDIR}/overseer"
out="${TEST_TMPDIR}/checkpoint_python_check"
mkdir -p "${out}/py" "${out}/ckpt"

if ! /usr/bin/python3 -c 'import google.protobuf' 2>/dev/null; then
  echo "python3-protobuf is not installed (apt-get install python3-protobuf; ./dev installs it)" >&2
  exit 1
fi
protoc -I. --python_out="${out}/py" proto/*.proto
tests/write_sample_checkpoint "${out}/ckpt"
PYTHONPATH="${out}/py" /usr/bin/python3 tests/read_checkpoint.py "${out}/ckpt"
