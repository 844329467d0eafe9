#!/usr/bin/env python3
"""Splits a GGUF file the way llama.cpp's llama-gguf-split --split-max-tensors N does, for the
tests of split models: PREFIX-00001-of-0000M.gguf holds every metadata key of the input, then
split.no (uint16, from 0), split.tensors.count (int32) and split.count (uint16), in that order
(the tool sets split.count last, over a placeholder, which moves it to the end); the other parts
hold only those three keys; each part holds N tensors in the input's order (with
--no-tensor-first-split the first part holds none), each padded to the alignment. Its output
was compared with llama-gguf-split's (llama.cpp 3e00f05f over ggml d99724f2) on the LLaDA and
LLaDA-MoE fixtures, with and without --no-tensor-first-split: identical, byte for byte.

usage: gguf_split.py [--no-tensor-first-split] [--split-max-tensors N] IN.gguf OUT_PREFIX
"""
import argparse
import struct

# struct formats of the scalar value types
SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q",
          12: "d"}
STRING, ARRAY, UINT16, INT32, UINT32 = 8, 9, 2, 5, 4
# Bytes per block and elements per block of the tensor types the fixtures hold.
BLOCKS = {0: (4, 1), 1: (2, 1), 30: (2, 1), 8: (34, 32), 2: (18, 32), 3: (20, 32), 6: (22, 32),
          7: (24, 32), 12: (144, 256), 13: (176, 256), 14: (210, 256), 10: (84, 256),
          11: (110, 256)}


class Reader:
    def __init__(self, data):
        self.data, self.off = data, 0

    def take(self, n):
        b = self.data[self.off:self.off + n]
        self.off += n
        return b

    def u32(self):
        return struct.unpack("<I", self.take(4))[0]

    def u64(self):
        return struct.unpack("<Q", self.take(8))[0]

    def value(self, t):
        """The next value, of GGUF type t: a number, a str, or a list."""
        if t == STRING:
            return self.take(self.u64()).decode("utf-8", "replace")
        if t == ARRAY:
            et, n = self.u32(), self.u64()
            return [self.value(et) for _ in range(n)]
        fmt = "<" + SCALAR[t]
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]


def string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def pad(n, a):
    return (n + a - 1) // a * a


def read_gguf(path):
    """(version, [(key, the key-value's bytes)], alignment, [(name, dims, type, data bytes)],
    {key: value}) of a GGUF file."""
    data = open(path, "rb").read()
    r = Reader(data)
    assert r.take(4) == b"GGUF", path
    version, n_tensors, n_kv = r.u32(), r.u64(), r.u64()
    kvs, meta = [], {}
    for _ in range(n_kv):
        start = r.off
        key = r.take(r.u64()).decode()
        meta[key] = r.value(r.u32())
        kvs.append((key, data[start:r.off]))
    alignment = meta.get("general.alignment", 32)
    tensors = []
    for _ in range(n_tensors):
        name = r.take(r.u64()).decode()
        dims = [r.u64() for _ in range(r.u32())]
        ttype, offset = r.u32(), r.u64()
        tensors.append((name, dims, ttype, offset))
    data_start = pad(r.off, alignment)
    out = []
    for name, dims, ttype, offset in tensors:
        block_bytes, block_elems = BLOCKS[ttype]
        n = 1
        for d in dims:
            n *= d
        size = n // block_elems * block_bytes
        out.append((name, dims, ttype, data[data_start + offset:data_start + offset + size]))
    return version, kvs, alignment, out, meta


def write_part(path, version, kvs, alignment, tensors):
    head = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs)) + b"".join(kvs)
    offset, body = 0, b""
    for name, dims, ttype, blob in tensors:
        head += string(name) + struct.pack("<I", len(dims))
        head += b"".join(struct.pack("<Q", d) for d in dims) + struct.pack("<IQ", ttype, offset)
        offset += pad(len(blob), alignment)
        body += blob + b"\0" * (pad(len(blob), alignment) - len(blob))
    with open(path, "wb") as f:
        f.write(head + b"\0" * (pad(len(head), alignment) - len(head)) + body)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--split-max-tensors", type=int, default=128)
    ap.add_argument("--no-tensor-first-split", action="store_true")
    ap.add_argument("input")
    ap.add_argument("prefix")
    a = ap.parse_args()
    version, kvs, alignment, tensors, _ = read_gguf(a.input)
    n = a.split_max_tensors
    groups = [tensors[i:i + n] for i in range(0, len(tensors), n)]
    if a.no_tensor_first_split:
        groups.insert(0, [])
    split_keys = {"split.no", "split.count", "split.tensors.count"}
    kvs = [kv for kv in kvs if kv[0] not in split_keys]
    for i, group in enumerate(groups):
        keys = [string("split.no") + struct.pack("<IH", UINT16, i),
                string("split.tensors.count") + struct.pack("<Ii", INT32, len(tensors)),
                string("split.count") + struct.pack("<IH", UINT16, len(groups))]
        part_kvs = [b for _, b in kvs] + keys if i == 0 else keys
        write_part("%s-%05d-of-%05d.gguf" % (a.prefix, i + 1, len(groups)), version, part_kvs,
                   alignment if i == 0 else 32, group)


if __name__ == "__main__":
    main()
