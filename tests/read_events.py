"""Out-of-language check of Overseer's event files (run by summary_python_check_test.sh).

Reads every event file of a run directory the way TensorBoard's pure-Python reader
does: TFRecord framing with both masked CRC32Cs verified (computed here, independently
of the C++ code), then parses each record with modules that protoc generated from
Overseer's .proto files, and checks the contents written by write_sample_events.
"""

import os
import struct
import sys

from proto import event_pb2
from proto import graph_pb2
from proto import tensor_pb2  # noqa: F401 (imported by summary_pb2)


def _crc_table():
    table = []
    for b in range(256):
        crc = b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
        table.append(crc)
    return table


_TABLE = _crc_table()


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc = (crc >> 8) ^ _TABLE[(crc ^ byte) & 0xFF]
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data):
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def read_records(path):
    with open(path, "rb") as f:
        data = f.read()
    offset = 0
    while offset < len(data):
        header = data[offset:offset + 12]
        if len(header) < 12:
            raise ValueError("%s: truncated header at %d" % (path, offset))
        (length,) = struct.unpack("<Q", header[:8])
        (length_crc,) = struct.unpack("<I", header[8:12])
        if length_crc != masked_crc32c(header[:8]):
            raise ValueError("%s: failed header crc32 check at %d" % (path, offset))
        body = data[offset + 12:offset + 12 + length + 4]
        if len(body) < length + 4:
            raise ValueError("%s: truncated record at %d" % (path, offset))
        (data_crc,) = struct.unpack("<I", body[length:])
        if data_crc != masked_crc32c(body[:length]):
            raise ValueError("%s: failed event crc32 check at %d" % (path, offset))
        yield body[:length]
        offset += 12 + length + 4


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def main(run_dir):
    # TensorBoard's own test vector (FORMATS.md 1.3) checks this CRC first.
    check(masked_crc32c(b"\x1a\x11CRC test, one two") == 0x5794D08A, "crc32c self-test")
    names = sorted(n for n in os.listdir(run_dir) if "tfevents" in n)
    check(len(names) == 2, "expected 2 event files, got %r" % names)
    files = []
    for name in names:
        events = []
        for record in read_records(os.path.join(run_dir, name)):
            event = event_pb2.Event()
            event.ParseFromString(record)
            events.append(event)
        files.append(events)
        first = events[0]
        check(first.file_version == "brain.Event:2", "first record of %s" % name)
        check(first.wall_time > 1.5e9, "wall_time is Unix seconds")
        check(float(first.file_version.split(":")[1]) >= 2, "version parses as TensorBoard does")

    first, second = files
    graph = graph_pb2.GraphDef()
    graph.ParseFromString(first[1].graph_def)
    check(graph.node[0].name == "weights" and graph.node[0].op == "VariableV2", "graph_def")
    check(graph.versions.producer == 27, "graph versions")
    check(first[2].session_log.status == event_pb2.SessionLog.START, "initial START")
    losses = [(e.step, e.summary.value[0].simple_value) for e in first[3:8]]
    check([s for s, _ in losses] == [0, 1, 2, 3, 4], "steps %r" % losses)
    check(abs(losses[1][1] - 0.5) < 1e-7, "loss at step 1")
    histo = first[7].summary.value[1].histo
    check(first[7].summary.value[1].tag == "weights", "histogram tag")
    check(histo.num == 4 and histo.min == -1.0 and histo.max == 2.0, "histogram stats")
    check(histo.sum == 2.0 and histo.sum_squares == 5.5, "histogram sums")
    check(sum(histo.bucket) == 4 and len(histo.bucket) == len(histo.bucket_limit), "buckets")
    tensor_value = first[7].summary.value[2]
    check(tensor_value.metadata.plugin_data.plugin_name == "scalars", "plugin name")
    check(tensor_value.metadata.data_class == 1, "DATA_CLASS_SCALAR")
    check(tensor_value.tensor.dtype == 1, "DT_FLOAT")
    check(len(tensor_value.tensor.tensor_shape.dim) == 0, "scalar shape")
    raw = tensor_value.tensor.tensor_content
    value = struct.unpack("<f", raw)[0] if raw else tensor_value.tensor.float_val[0]
    check(value == 0.75, "tensor value %r" % value)

    check(second[1].session_log.status == event_pb2.SessionLog.START, "restart START")
    check(second[1].step == 3, "restart step")
    check([e.step for e in second[2:4]] == [3, 4], "steps after restart")
    check(second[2].summary.value[0].simple_value == 13.0, "new value at step 3")
    check(second[4].session_log.status == event_pb2.SessionLog.CHECKPOINT, "checkpoint")
    check(second[4].session_log.checkpoint_path.endswith("model.ckpt-4"), "checkpoint path")
    print("ok: %d + %d events parsed by python protobuf" % (len(first), len(second)))


if __name__ == "__main__":
    main(sys.argv[1])
