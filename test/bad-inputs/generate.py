#!/usr/bin/env python3
"""Writes the bad-input corpus next to this script: every file is
malformed in its own way. The files are committed; rerun this only to
change the corpus. test/mpi_bad_inputs.c feeds each one to the program
that reads it and expects exit status 2 and one line naming the file."""
import gzip
import os
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))


def put(kind, name, data):
    os.makedirs(os.path.join(HERE, kind), exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(HERE, kind, name), "wb") as f:
        f.write(data)


# ------------------------------------------------------------ flag files
FLAGS = {
    "unknown-flag.flags": "--lernrate=0.1\n",
    "no-value.flags": "--lr\n",
    "not-a-number.flags": "--lr=fast\n",
    "out-of-range.flags": "# zero epochs\n--epochs=0\n",
    "not-whole.flags": "--batch-size=3.5\n",
    "no-dashes.flags": "lr=0.1\n",
    "self-include.flags": "--flagfile=self-include.flags\n",
    "missing-include.flags": "--flagfile=does-not-exist.flags\n",
    "line-too-long.flags": "--data-dir=" + "x" * 2000 + "\n",
    "value-too-long.flags": "--metrics=" + "y" * 300 + "\n",
    "unknown-algorithm.flags": "--lr=0.1\n--algorithm=adamw\n",
    "bad-hidden.flags": "--hidden=512,,256\n",
    "nan.flags": "--lr=nan\n",
    "overflow.flags": "--seed=1e400\n",
    "empty-include.flags": "--flagfile=\n",
    "binary.flags": b"\x7fELF\x02\x01\x01\x00\x00\r\x1b[31m\n",
    "bad-overlap.flags": "--overlap=maybe\n",
    "bad-shared-memory.flags": "--shared-memory=yes\n",
    "bad-straggle.flags": "--straggle=1,x:4\n",
    "negative-keep.flags": "--checkpoint-keep=-1\n",
}
for name, text in FLAGS.items():
    put("flags", name, text)

# ------------------------------------------------------------ IDX files
def idx(magic, dims, payload=b""):
    return struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in dims) + payload


LABELS = {
    "empty.labels": b"",
    "wrong-magic.labels": idx(0x803, [3], b"\x00\x01\x02"),
    "short-header.labels": b"\x00\x00\x08\x01\x00\x00",
    "zero-count.labels": idx(0x801, [0]),
    "huge-count.labels": idx(0x801, [0x7FFFFFFF]),
    "truncated-data.labels": idx(0x801, [100], bytes(50)),
    "trailing.labels": idx(0x801, [3], b"\x00\x01\x02\x03"),
    "label-out-of-range.labels": idx(0x801, [3], b"\x00\x0a\x02"),
}
good_gz = gzip.compress(idx(0x801, [3], b"\x00\x01\x02"), mtime=0)
LABELS["corrupt.labels.gz"] = good_gz[:12] + bytes([good_gz[12] ^ 0xFF]) + good_gz[13:]
LABELS["truncated.labels.gz"] = good_gz[: len(good_gz) - 6]
LABELS["bad-gzip-trailer.labels.gz"] = good_gz[:-8] + b"\x00" * 8
for name, data in LABELS.items():
    put("labels", name, data)

# The labels every image case is paired with: valid, 3 samples.
with open(os.path.join(HERE, "ok-3.labels"), "wb") as f:
    f.write(idx(0x801, [3], b"\x00\x01\x02"))

IMAGES = {
    "wrong-magic.images": idx(0x801, [3, 2, 2], bytes(12)),
    "zero-rows.images": idx(0x803, [3, 0, 28]),
    "huge-dims.images": idx(0x803, [3, 65536, 65536]),
    "count-mismatch.images": idx(0x803, [4, 2, 2], bytes(16)),
    "truncated.images": idx(0x803, [3, 2, 2], bytes(7)),
    "trailing.images": idx(0x803, [3, 2, 2], bytes(13)),
    "short-header.images": idx(0x803, [3]),
}
for name, data in IMAGES.items():
    put("images", name, data)

# ------------------------------------------------------------ checkpoints
MAGIC = b"QGMCKPT\x1a"


def body(sections):
    out = b""
    for name, typ, count, data in sections:
        out += bytes([len(name)]) + name + bytes([typ]) + struct.pack("<Q", count) + data
    return out


def checkpoint(raw, nsections, version=1, raw_len=None, z=None, config=7):
    z = zlib.compress(raw, 1) if z is None else z
    raw_len = len(raw) if raw_len is None else raw_len
    head = MAGIC + struct.pack("<IIQQQ", version, nsections, config, raw_len, len(z))
    outer = zlib.crc32(z, zlib.crc32(head))
    return head + struct.pack("<II", outer, zlib.crc32(raw)) + z


good_raw = body([(b"x", 1, 2, struct.pack("<ff", 1.0, 2.0)), (b"rng", 2, 1, struct.pack("<Q", 5))])
good = checkpoint(good_raw, 2)
CKPTS = {
    "empty.qgmc": b"",
    "not-a-checkpoint.qgmc": b"--lr=0.1\n",
    "short-header.qgmc": good[:20],
    "future-version.qgmc": checkpoint(good_raw, 2, version=9),
    "flipped-body.qgmc": good[:-3] + bytes([good[-3] ^ 1]) + good[-2:],
    "flipped-crc.qgmc": good[:41] + bytes([good[41] ^ 0x80]) + good[42:],
    "truncated.qgmc": good[:-5],
    "trailing.qgmc": good + b"\x00",
    "huge-raw-size.qgmc": checkpoint(good_raw, 2, raw_len=1 << 40),
    "section-overrun.qgmc": checkpoint(body([(b"x", 1, 1 << 60, b"")]), 1),
    "bad-type.qgmc": checkpoint(body([(b"x", 7, 1, b"\x00")]), 1),
    "duplicate-section.qgmc": checkpoint(body([(b"x", 0, 1, b"a"), (b"x", 0, 1, b"b")]), 2),
    "too-many-sections.qgmc": checkpoint(good_raw, 1000),
    "zlib-garbage.qgmc": checkpoint(good_raw, 2, z=b"\x78\x01garbage-not-deflate"),
    "nul-in-name.qgmc": checkpoint(body([(b"a\x00b", 0, 1, b"a")]), 1),
    "raw-crc-mismatch.qgmc": good[:44] + bytes([good[44] ^ 1]) + good[45:],
}
for name, data in CKPTS.items():
    put("checkpoint", name, data)

# ------------------------------------------------------------ topology edge files
# Read by qgmd --topology=file:F under mpirun -np 4: ids 0..3 are valid.
# test/mpi_bad_inputs.c lists the line each one must be blamed on.
RING4 = "nodes 4\n0 1\n1 2\n2 3\n3 0\n"
TOPOLOGY = {
    "empty.edges": "",
    "only-comments.edges": "# a ring, some day\n\n   # not yet\n",
    "nodes-but-no-edges.edges": "nodes 4\n# edges to follow\n",
    "garbage.edges": "hello world\n",
    "binary.edges": b"\x7fELF\x02\x01\x01\x00\x00\x00",
    "escape-codes.edges": "0 1\n\x1b[31m1 2\x1b[0m\n",
    "id-out-of-range.edges": "0 1\n1 2\n2 4\n",
    "negative-id.edges": "0 1\n1 -2\n",
    "non-integer-id.edges": "0 1\n1 2.5\n",
    "hex-id.edges": "0 0x1\n",
    "huge-id.edges": "0 1\n1 99999999999999999999999999\n",
    "self-loop.edges": "0 1\n1 2\n2 2\n2 3\n",
    "duplicate-edge.edges": "0 1\n1 2\n2 3\n3 0\n2 1   # again, reversed\n",
    "disconnected.edges": "0 1\n2 3\n",
    "isolated-node.edges": "nodes 4\n0 1\n1 2\n2 0\n",
    "weights-over-one.edges": "0 1 0.5\n1 2 0.25\n2 3 0.5\n0 3 0.75\n",
    "weights-sum-to-one.edges": "0 1 0.5\n1 2 0.5\n2 3 0.5\n3 0 0.5\n",
    "negative-weight.edges": "0 1 0.5\n1 2 -0.25\n",
    "zero-weight.edges": "0 1 0\n",
    "nan-weight.edges": "0 1 0.25\n1 2 nan\n",
    "inf-weight.edges": "0 1 inf\n",
    "huge-weight.edges": "0 1 1e400\n",
    "weight-garbage.edges": "0 1 0.25x\n",
    "mixed-weights.edges": "0 1 0.25\n1 2\n",
    "too-many-columns.edges": "0 1 0.5 7\n",
    "one-column.edges": "0 1\n2\n",
    "nodes-mismatch.edges": "# for 5 ranks\nnodes 5\n0 1\n1 2\n2 3\n3 4\n",
    "nodes-late.edges": "0 1\nnodes 4\n",
    "nodes-twice.edges": "nodes 4\nnodes 4\n0 1\n",
    "nodes-zero.edges": "nodes 0\n",
    "nodes-not-a-number.edges": "nodes four\n0 1\n",
    "long-line.edges": "0 1\n1 2 " + "9" * 100000 + "\n",
    "long-comment-then-bad.edges": "# " + "c" * 100000 + "\n0 1\n1 1\n",
    "no-trailing-newline.edges": "0 1\n1 2\n2 3\n3 3",
    "crlf-self-loop.edges": "0 1\r\n1 2\r\n2 2\r\n",
    "many-repeats.edges": RING4 + "1 2\n" * 50000,
}
for name, text in TOPOLOGY.items():
    put("topology", name, text)
# A directory where the file should be (git keeps it for the file inside).
put("topology/directory.edges", "README",
    "This directory stands where an edge file is expected.\n")

# ------------------------------------------------------------ CIFAR directories
# Each case is a data directory for qgmd --dataset=cifar10|cifar100
# --data-dir=D, one file in it broken; the others are the valid files of
# ok-cifar10/ and ok-cifar100/ (two records each, all pixels 0).
C10_REC, C100_REC = 1 + 3072, 2 + 3072


def c10(*labels):
    return b"".join(bytes([y]) + bytes(3072) for y in labels)


def c100(*pairs):
    return b"".join(bytes([coarse, fine]) + bytes(3072) for coarse, fine in pairs)


C10_FILES = ["data_batch_%d.bin" % i for i in range(1, 6)] + ["test_batch.bin"]
C10_GOOD = c10(3, 7)
C100_FILES = ["train.bin", "test.bin"]
C100_GOOD = c100((4, 21), (19, 99))


def data_dir(kind, case, good, names, changes):
    """Writes kind/case/ with the good file under every name, then the
    changes: bytes replace a file, None removes it, "dir" makes it a
    directory."""
    for name in names:
        change = changes.get(name, good)
        if change is None:
            continue
        if change == "dir":
            put(os.path.join(kind, case, name), "README",
                "This directory stands where a data file is expected.\n")
        else:
            put(os.path.join(kind, case), name, change)


for name in C10_FILES:
    put("ok-cifar10", name, C10_GOOD)
for name in C100_FILES:
    put("ok-cifar100", name, C100_GOOD)

CIFAR10 = {
    "empty-batch": {"data_batch_3.bin": b""},
    "truncated-record": {"data_batch_2.bin": c10(1, 2)[:C10_REC + 1000]},
    "half-record": {"data_batch_5.bin": c10(1)[:100]},
    "extra-byte": {"test_batch.bin": C10_GOOD + b"\x00"},
    "label-10": {"data_batch_4.bin": c10(9, 10)},
    "label-255": {"test_batch.bin": c10(255, 0)},
    "missing-batch": {"data_batch_5.bin": None},
    "missing-test": {"test_batch.bin": None},
    "directory-batch": {"data_batch_1.bin": "dir"},
    "cifar100-records": {"data_batch_1.bin": C100_GOOD},
    "text-file": {"data_batch_2.bin": "label,pixels\n3,0 0 0\n"},
}
for case, changes in CIFAR10.items():
    data_dir("cifar10", case, C10_GOOD, C10_FILES, changes)
# The wrong directory altogether: no data files in it.
put("cifar10/no-data-files", "README", "Not a CIFAR-10 directory.\n")
# A file where the directory should be.
put("cifar10", "data-dir-is-a-file", C10_GOOD)

CIFAR100 = {
    "coarse-20": {"train.bin": c100((3, 15), (20, 99))},
    "fine-100": {"test.bin": c100((19, 100))},
    "coarse-255": {"train.bin": c100((255, 0), (0, 0))},
    "cifar10-records": {"train.bin": C10_GOOD},
    "empty-train": {"train.bin": b""},
    "truncated-test": {"test.bin": C100_GOOD[:C100_REC + 7]},
    "missing-test": {"test.bin": None},
    "directory-train": {"train.bin": "dir"},
}
for case, changes in CIFAR100.items():
    data_dir("cifar100", case, C100_GOOD, C100_FILES, changes)

# Valid files: seeds for the fuzzers (test/fuzz/seeds/), not bad inputs.
SEEDS = os.path.join(HERE, "..", "fuzz", "seeds")
for kind, name, data in [
        # fuzz_checkpoint's first byte: 0 = a whole file, 2n+1 = a body
        # of n sections that the harness wraps in a valid file.
        ("checkpoint", "good.qgmc", b"\x00" + good),
        ("checkpoint", "good-body", b"\x05" + good_raw),
        ("checkpoint", "good.MANIFEST",
         "qgm checkpoint manifest 1\nstep 8\nnodes 4\nconfig 0000000000000007\n"),
        ("flags", "good.flags",
         "# a comment\n--algorithm=dsgd\n--lr=0.05\n--hidden=64,32\n"
         "--straggle=1,3:4\n--overlap=on\n--flagfile=other.flags\n"),
        ("labels", "good-plain", b"\x00" + idx(0x801, [3], b"\x00\x01\x02")),
        ("labels", "good-gzip", b"\x00" + good_gz),
        ("labels", "good-pair", b"\x02" + idx(0x801, [2], b"\x01\x02") +
         idx(0x803, [2, 2, 2], bytes(range(8)))),
        # fuzz_topology's first byte: the node count is 1 + byte % 64.
        ("topology", "ring4", b"\x03" + RING4.encode()),
        ("topology", "weighted", b"\x02" +
         b"# a weighted path\nnodes 3\n0 1 0.5\n2 1 0.25\r\n"),
        ("topology", "social", b"\x1f" + open(os.path.join(
            HERE, "..", "..", "topologies",
            "davis-southern-women.edges"), "rb").read()),
        # fuzz_cifar's first byte: bit 0 picks CIFAR-100, the rest the
        # node count; the other bytes are every file of the directory.
        ("cifar", "cifar10", b"\x00" + c10(3, 7)),
        ("cifar", "cifar10-3-nodes", b"\x04" + c10(1, 2, 3)),
        ("cifar", "cifar100", b"\x01" + c100((4, 21), (19, 99)))]:
    os.makedirs(os.path.join(SEEDS, kind), exist_ok=True)
    with open(os.path.join(SEEDS, kind, name), "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)

# ------------------------------------------------------------ manifests
MANIFESTS = {
    "empty.MANIFEST": "",
    "other-version.MANIFEST": "qgm checkpoint manifest 2\nstep 8\nnodes 4\nconfig 0000000000000007\n",
    "zero-nodes.MANIFEST": "qgm checkpoint manifest 1\nstep 8\nnodes 0\nconfig 0000000000000007\n",
    "short-hash.MANIFEST": "qgm checkpoint manifest 1\nstep 8\nnodes 4\nconfig 7\n",
    "garbage.MANIFEST": b"\x00\xff" * 40,
}
for name, data in MANIFESTS.items():
    put("manifest", name, data)
