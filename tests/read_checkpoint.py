"""Out-of-language check of Overseer's checkpoints (run by checkpoint_python_check_test.sh).

Reads the checkpoint write_sample_checkpoint wrote the way an independent reader of
TensorFlow's V2 bundle would: the `checkpoint` state file with protobuf's text format,
the .index LevelDB table parsed here from its documented layout (footer magic, block
handles, prefix-compressed entries, every block's masked CRC32C verified), its values
decoded as BundleHeaderProto / BundleEntryProto with modules protoc generated from
Overseer's .proto files, and each tensor's bytes checked against its entry's CRC32C and
against the values the writer used.
"""

import os
import struct
import sys

from google.protobuf import text_format

from proto import tensor_bundle_pb2
from proto import types_pb2

_TABLE_MAGIC = 0xDB4775248B80FB57
_FOOTER_BYTES = 48


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


def varint(buf, pos):
    result, shift = 0, 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def read_block(table, handle):
    offset, size = handle
    contents = table[offset:offset + size]
    kind = table[offset + size]
    (stored_crc,) = struct.unpack_from("<I", table, offset + size + 1)
    assert kind == 0, "block at %d is compressed (type %d)" % (offset, kind)
    assert stored_crc == masked_crc32c(contents + bytes([kind])), "bad block CRC at %d" % offset
    return contents


def block_entries(block):
    (num_restarts,) = struct.unpack_from("<I", block, len(block) - 4)
    end = len(block) - 4 - 4 * num_restarts
    pos, key = 0, b""
    while pos < end:
        shared, pos = varint(block, pos)
        non_shared, pos = varint(block, pos)
        value_len, pos = varint(block, pos)
        key = key[:shared] + block[pos:pos + non_shared]
        pos += non_shared
        yield key, block[pos:pos + value_len]
        pos += value_len


def read_table(path):
    with open(path, "rb") as f:
        table = f.read()
    footer = table[-_FOOTER_BYTES:]
    (magic,) = struct.unpack_from("<Q", footer, _FOOTER_BYTES - 8)
    assert magic == _TABLE_MAGIC, "bad table magic %x" % magic
    pos = 0
    meta_offset, pos = varint(footer, pos)
    meta_size, pos = varint(footer, pos)
    index_offset, pos = varint(footer, pos)
    index_size, pos = varint(footer, pos)
    read_block(table, (meta_offset, meta_size))
    entries = []
    for _, handle in block_entries(read_block(table, (index_offset, index_size))):
        offset, p = varint(handle, 0)
        size, _ = varint(handle, p)
        entries.extend(block_entries(read_block(table, (offset, size))))
    keys = [k for k, _ in entries]
    assert keys == sorted(keys), "table keys out of order"
    return entries


EXPECTED = {
    "a/bias": (types_pb2.DT_FLOAT, [5], [i * 0.5 for i in range(5)]),
    "b/weights": (types_pb2.DT_FLOAT, [3, 4], [100.0 + i for i in range(12)]),
    "c/step": (types_pb2.DT_INT64, [], [42]),
    "d/table": (types_pb2.DT_FLOAT, [600, 1000], [(i % 1000) * 0.25 for i in range(600000)]),
}
FORMATS = {types_pb2.DT_FLOAT: "f", types_pb2.DT_INT64: "q"}


def main(directory):
    state = tensor_bundle_pb2.CheckpointState()
    with open(os.path.join(directory, "checkpoint")) as f:
        text_format.Parse(f.read(), state)
    assert state.model_checkpoint_path == "model.ckpt-7", state
    assert list(state.all_model_checkpoint_paths) == ["model.ckpt-7"], state
    prefix = os.path.join(directory, state.model_checkpoint_path)

    entries = read_table(prefix + ".index")
    assert entries[0][0] == b"", "the header is not the first key"
    header = tensor_bundle_pb2.BundleHeaderProto.FromString(entries[0][1])
    assert header.num_shards == 2, header
    assert header.endianness == tensor_bundle_pb2.BundleHeaderProto.LITTLE
    assert header.version.producer == 1, header

    seen = set()
    for key, value in entries[1:]:
        name = key.decode()
        entry = tensor_bundle_pb2.BundleEntryProto.FromString(value)
        dtype, dims, values = EXPECTED[name]
        assert entry.dtype == dtype, (name, entry)
        assert [d.size for d in entry.shape.dim] == dims, (name, entry)
        data_file = "%s.data-%05d-of-%05d" % (prefix, entry.shard_id, header.num_shards)
        with open(data_file, "rb") as f:
            f.seek(entry.offset)
            data = f.read(entry.size)
        assert len(data) == entry.size, (name, "short data file")
        assert masked_crc32c(data) == entry.crc32c, (name, "CRC32C mismatch")
        decoded = list(struct.unpack("<%d%s" % (len(values), FORMATS[dtype]), data))
        assert decoded == values, (name, decoded[:10])
        seen.add(name)
    assert seen == set(EXPECTED), seen
    print("read %d tensors of %s: OK" % (len(seen), prefix))


if __name__ == "__main__":
    main(sys.argv[1])
