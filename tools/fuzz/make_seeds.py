#!/usr/bin/env python3
"""Writes the binary seeds of the fuzz targets' corpora (testdata/fuzz/<target>/).

The protobuf seeds are the text files in tools/fuzz/seeds/ encoded by protoc; the
framed ones (RecvTensor streams, event files, state files, bundles) are assembled here.
Run from the repository's root after changing a seed: tools/fuzz/make_seeds.py
(needs protoc). Inputs that crashed a target are added next to these by hand, under a
name saying what they found.
"""

import os
import struct
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SEEDS = os.path.join(ROOT, "tools", "fuzz", "seeds")


def encode(message, text):
    return subprocess.run(
        ["protoc", f"--encode=overseer.{message}", "-I", ROOT, f"proto/{message_file(message)}"],
        input=text.encode(), capture_output=True, check=True, cwd=ROOT).stdout


def message_file(message):
    return {"GraphDef": "graph.proto", "TensorProto": "tensor.proto",
            "RecvTensorResponse": "worker.proto", "Event": "event.proto"}[message]


def write(target_dir, name, data):
    os.makedirs(target_dir, exist_ok=True)
    with open(os.path.join(target_dir, name), "wb") as f:
        f.write(data)


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(crc):
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def record(data):
    header = struct.pack("<Q", len(data))
    return (header + struct.pack("<I", masked(crc32c(header))) + data +
            struct.pack("<I", masked(crc32c(data))))


def main():
    text = lambda name: open(os.path.join(SEEDS, name)).read()
    graphs = os.path.join(ROOT, "core", "graph", "testdata", "fuzz", "graph_def_fuzz")
    tensors = os.path.join(ROOT, "core", "testdata", "fuzz", "tensor_proto_fuzz")
    for name in sorted(os.listdir(SEEDS)):
        stem = name[:-len(".txtpb")]
        if name.startswith("graph_"):
            write(graphs, stem, encode("GraphDef", text(name)))
        elif name.startswith("tensor_"):
            write(tensors, stem, encode("TensorProto", text(name)))

    chunks = os.path.join(ROOT, "worker", "rpc", "testdata", "fuzz", "tensor_chunks_fuzz")
    frame = lambda m: struct.pack("<H", len(m)) + m
    first = encode("RecvTensorResponse",
                   'tensor { dtype: DT_FLOAT tensor_shape { dim { size: 2 } dim { size: 2 } } } '
                   'total_bytes: 16 content: "\\000\\000\\200?\\000\\000\\000@"')
    rest = encode("RecvTensorResponse", 'content: "\\000\\000@@\\000\\000\\200@"')
    write(chunks, "float_2x2_in_two", frame(first) + frame(rest))
    write(chunks, "strings", frame(encode(
        "RecvTensorResponse",
        'tensor { dtype: DT_STRING tensor_shape { dim { size: 2 } } string_val: "a" string_val: "bc" }')))
    write(chunks, "truncated", frame(first))
    write(chunks, "empty_int32", frame(encode(
        "RecvTensorResponse", 'tensor { dtype: DT_INT32 tensor_shape { dim { size: 0 } } }')))

    calls = os.path.join(ROOT, "worker", "rpc", "testdata", "fuzz", "local_calls_fuzz")
    # Frames of worker/rpc/local_calls.h: "OVLC", kind, 0, method, id, code, length, body.
    lc = lambda kind, method, id, code, body, length=None: struct.pack(
        "<IBBHQII", 0x434C564F, kind, 0, method, id, code,
        len(body) if length is None else length) + body
    write(calls, "server_echo", b"\0" + lc(1, 1, 7, 0, b"hello"))
    write(calls, "server_pipelined", b"\0" + lc(1, 1, 1, 0, b"a") + lc(4, 0, 0, 0, b"") +
          lc(1, 2, 2, 0, b"b") + lc(1, 3, 3, 0, b"") + lc(2, 0, 3, 0, b"") + lc(1, 9, 4, 0, b"c"))
    write(calls, "server_pending_at_end", b"\0" + lc(1, 3, 5, 0, b"wait"))
    # Two calls still waiting when the connection ends in a cut header (libFuzzer's leak
    # check once reported them; the harness now waits until the server has freed them).
    write(calls, "server_two_pending_cut_short",
          b"\0" + lc(1, 3, 6, 0, b"") + lc(1, 3, 5, 0, b"") + b"t")
    write(calls, "server_reused_id", b"\0" + lc(1, 3, 6, 0, b"") + lc(1, 1, 6, 0, b""))
    write(calls, "server_bad_magic", b"\0" + b"XXXX" + lc(1, 1, 1, 0, b"x")[4:])
    write(calls, "server_reply_kind", b"\0" + lc(3, 0, 1, 0, b"not a call"))
    write(calls, "server_cut_short", b"\0" + lc(1, 1, 8, 0, b"", length=100) + b"partial")
    write(calls, "server_large_body", b"\2" + lc(1, 1, 9, 0, b"", length=200000) + b"pattern")
    write(calls, "server_over_limit", b"\2" + lc(1, 1, 10, 0, b"", length=1100000) + b"x")
    write(calls, "channel_reply", b"\1" + lc(3, 0, 1, 0, b"world"))
    write(calls, "channel_error", b"\1" + lc(3, 0, 1, 3, b"bad argument"))
    write(calls, "channel_pong_then_reply", b"\1" + lc(5, 0, 0, 0, b"") + lc(3, 0, 1, 0, b"ok"))
    write(calls, "channel_other_id", b"\1" + lc(3, 0, 2, 0, b"for another call"))
    write(calls, "channel_bad_code", b"\1" + lc(3, 0, 1, 99, b"code"))
    write(calls, "channel_call_kind", b"\1" + lc(1, 1, 1, 0, b"a call to the client"))
    write(calls, "channel_nothing", b"\1")

    events = os.path.join(ROOT, "summary_writer", "testdata", "fuzz", "event_records_fuzz")
    version = encode("Event", 'wall_time: 1700000000.5 file_version: "brain.Event:2"')
    scalar = encode("Event", 'wall_time: 1700000001 step: 7 summary { value { tag: "loss" simple_value: 0.25 } }')
    write(events, "two_events", record(version) + record(scalar))
    write(events, "cut_short", (record(version) + record(scalar))[:-3])
    write(events, "empty_record", record(b""))

    state = os.path.join(ROOT, "checkpoint_store", "testdata", "fuzz", "state_fuzz")
    write(state, "state_two", b"s" + b'model_checkpoint_path: "model.ckpt-20"\n'
          b'all_model_checkpoint_paths: "model.ckpt-10"\n'
          b'all_model_checkpoint_paths: "model.ckpt-20"\n')
    write(state, "state_garbage", b"s" + b"model_checkpoint_path: \x00\xff {")
    for fixture in ["minigo.index", "transformer.index"]:
        with open(os.path.join(ROOT, "checkpoint_store", "testdata", fixture), "rb") as f:
            index = f.read()
        write(state, "bundle_" + fixture.split(".")[0], b"b" + struct.pack("<I", len(index)) + index)


if __name__ == "__main__":
    main()
