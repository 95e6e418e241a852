#!/usr/bin/env python3
"""Writes the fuzzers' seed corpora (fuzz/corpus/<target>/): a few small,
valid files of each real format, so the fuzzers start from the structure
they must get past. Run from anywhere; it rewrites the seed_* files only
(crash regressions added by hand, named regress_*, stay)."""
import gzip
import json
import os
import pickle
import struct

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def put(target, name, data):
    folder = os.path.join(HERE, target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "seed_" + name), "wb") as f:
        f.write(data)


def gz(data):
    return gzip.compress(data, compresslevel=9, mtime=0)  # mtime 0: the same bytes every run


def idx(dims, data):
    return bytes([0, 0, 8, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims) + bytes(data)


# IDX: labels, a few images, 4-D, each plain and gzipped.
labels = idx([12], [i % 10 for i in range(12)])
images = idx([2, 28, 28], [(i * 7) % 256 for i in range(2 * 28 * 28)])
cube = idx([2, 3, 2, 2], list(range(24)))
empty = idx([0], [])
one_image = idx([1, 28, 28], [(i * 13) % 256 for i in range(28 * 28)])
matrix = idx([3, 4], list(range(12)))
for name, data in [("labels", labels), ("images", images), ("4d", cube), ("empty", empty), ("one_image", one_image),
                   ("matrix", matrix)]:
    put("idx", name + ".idx", data)
    put("idx", name + ".idx.gz", gz(data))

# CIFAR: the first byte picks the format (even: CIFAR-10, odd: CIFAR-100).
def cifar_record(labels, seed):
    return bytes(labels) + bytes((seed * 31 + i * 7) % 256 for i in range(3072))

put("cifar", "cifar10_two_records", b"\x00" + cifar_record([3], 1) + cifar_record([9], 2))
put("cifar", "cifar100_one_record", b"\x01" + cifar_record([19, 99], 3))
put("cifar", "cifar100_two_records", b"\x01" + cifar_record([4, 42], 4) + cifar_record([0, 0], 5))
put("cifar", "cifar10_one_record", b"\x00" + cifar_record([0], 6))
put("cifar", "cifar10_every_label", b"\x00" + b"".join(cifar_record([k], 7 + k) for k in range(10)))
put("cifar", "cifar10_label_out_of_range", b"\x00" + cifar_record([10], 17))
put("cifar", "cifar10_truncated", b"\x00" + cifar_record([5], 18)[:1500])
put("cifar", "cifar10_empty", b"\x00")
put("cifar", "cifar100_fine_label_out_of_range", b"\x01" + cifar_record([19, 100], 19))
put("cifar", "cifar100_truncated", b"\x01" + cifar_record([1, 2], 20) + cifar_record([3, 4], 21)[:7])

# ImageNet label files: the first byte picks the format (odd: Kaggle CSV, even: list).
put("imagenet_labels", "kaggle.csv",
    b"\x01ImageId,PredictionString\n"
    b"ILSVRC2012_val_00000001,n01440764 12 34 200 180\n"
    b"ILSVRC2012_val_00000002,n01494475 1 2 3 4 n01494475 5 6 7 8\r\n"
    b"ILSVRC2012_val_00000003,n01443537 0 0 10 10\n")
put("imagenet_labels", "val_labels.txt",
    b"\x00# file class\n"
    b"ILSVRC2012_val_00000001.JPEG 0\n"
    b"ILSVRC2012_val_00000002.JPEG n01484850\n"
    b"\n"
    b"ILSVRC2012_val_00000003.JPEG 4\n")
put("imagenet_labels", "kaggle_header_only.csv", b"\x01ImageId,PredictionString\n")
put("imagenet_labels", "kaggle_crlf_no_newline.csv",
    b"\x03ImageId,PredictionString\r\nILSVRC2012_val_00000001,n01440764 1 2 3 4\r\n"
    b"ILSVRC2012_val_00000002,n01443537 5 6 7 8")
put("imagenet_labels", "kaggle_no_box.csv", b"\x01ImageId,PredictionString\nILSVRC2012_val_00000001,n01440764\n")
put("imagenet_labels", "kaggle_bad_header.csv", b"\x01Image,Labels\nILSVRC2012_val_00000001,n01440764 1 2 3 4\n")
put("imagenet_labels", "kaggle_empty_prediction.csv", b"\x01ImageId,PredictionString\nILSVRC2012_val_00000001,\n")
put("imagenet_labels", "list_comments_only.txt", b"\x00# nothing but comments\n# here\n")
put("imagenet_labels", "list_last_class.txt", b"\x02ILSVRC2012_val_00050000.JPEG 999\nILSVRC2012_val_00000001.JPEG 0")
put("imagenet_labels", "list_missing_class.txt", b"\x00ILSVRC2012_val_00000001.JPEG\n")
put("imagenet_labels", "list_tabs.txt", b"\x00ILSVRC2012_val_00000001.JPEG\t7\r\nILSVRC2012_val_00000002.JPEG  n01440764  \n")

# Allocation traces, as `tidepool replay` reads them.
put("replay_trace", "offload.csv",
    b"event,id,bytes,offload\nalloc,0,1048576,0\nalloc,1,524288,1\nfree,1,,1\nalloc,2,300,\nfree,0,,\nfree,2,,\n")
put("replay_trace", "three_columns.csv",
    b"# a comment\nevent,id,bytes\nalloc,7,4096\nalloc,8,256\nfree,7,\nalloc,7,4096\nfree,8,\n")
put("replay_trace", "header_only.csv", b"event,id,bytes\n")
put("replay_trace", "blank_lines_crlf.csv", b"event,id,bytes,offload\r\n\r\nalloc,1,1,1\r\n# c\r\nfree,1,,1\r\n")
put("replay_trace", "zero_size.csv", b"event,id,bytes\nalloc,1,0\n")
put("replay_trace", "free_unknown.csv", b"event,id,bytes\nfree,3,\n")
put("replay_trace", "alloc_twice.csv", b"event,id,bytes\nalloc,1,256\nalloc,1,256\n")
put("replay_trace", "largest_block.csv", b"event,id,bytes\nalloc,9,281474976710656\nalloc,10,281474976710657\n")
put("replay_trace", "negative_id.csv", b"event,id,bytes,offload\nalloc,-5,512,0\nfree,-5,,0\nalloc,9223372036854775807,1,\n")
put("replay_trace", "bad_header.csv", b"kind,id,size\nalloc,1,256\n")

# PyTorch memory snapshots, pickled (the unpickler and the snapshot reader):
# small ones in every protocol it reads, with shared frames lists (memo
# references), a ring buffer that starts mid-run, an oom and two devices;
# and what it must refuse: code, truncation, a bad memo index.
frames = [{"filename": "/usr/lib/python3/dist-packages/torch/nn/modules/conv.py", "line": 456, "name": "_conv_forward"},
          {"filename": "/home/user/train.py", "line": 42, "name": "forward"}]
snapshot = {
    "segments": [{"device": 0, "address": 1 << 40, "total_size": 2097152, "stream": 0, "segment_type": "small",
                  "segment_pool_id": (0, 0), "is_expandable": False,
                  "blocks": [{"address": 1 << 40, "size": 1024, "requested_size": 1000, "state": "active_allocated",
                              "frames": frames},
                             {"address": (1 << 40) + 1024, "size": 2096128, "requested_size": 0, "state": "inactive",
                              "frames": []}]}],
    "device_traces": [[
        {"action": "free_completed", "addr": (1 << 40) + 4096, "size": 512, "stream": 0, "time_us": 1, "frames": frames},
        {"action": "segment_alloc", "addr": 1 << 41, "size": 20971520, "stream": 7, "time_us": 2, "frames": frames},
        {"action": "alloc", "addr": 1 << 41, "size": 3000000, "stream": 7, "time_us": 3, "frames": frames},
        {"action": "free_requested", "addr": 1 << 41, "size": 3000000, "stream": 7, "time_us": 4, "frames": frames},
        {"action": "oom", "size": 1 << 30, "stream": 0, "device_free": 1 << 20, "time_us": 5, "frames": frames},
        {"action": "free_completed", "addr": 1 << 41, "size": 3000000, "stream": 7, "time_us": 6, "frames": frames},
        {"action": "segment_free", "addr": 1 << 41, "size": 20971520, "stream": 7, "time_us": 7, "frames": frames},
        {"action": "snapshot", "addr": 0, "size": 1024, "stream": 0, "time_us": 8, "frames": []}],
        [{"action": "alloc", "addr": 4096, "size": 100, "stream": 0, "time_us": 1, "frames": []}]],
}
for protocol in (2, 3, 4, 5):
    put("pickle", "snapshot_protocol_%d.pickle" % protocol, pickle.dumps(snapshot, protocol=protocol))
put("pickle", "plain_values.pickle", pickle.dumps([None, True, 1.5, -(1 << 63), (1 << 64) - 1, "é", b"xy",
                                                   bytearray(b"z"), {1: 2}, (1, 2, 3, 4), {3}, frozenset()], protocol=5))
put("pickle", "reduce_os_system.pickle", b"\x80\x02cposix\nsystem\nq\x00X\x02\x00\x00\x00lsq\x01\x85q\x02Rq\x03.")
put("pickle", "stack_global.pickle", b"\x80\x04\x8c\x05posix\x94\x8c\x06system\x94\x93\x94.")
put("pickle", "truncated.pickle", pickle.dumps(snapshot, protocol=4)[:200])
put("pickle", "bad_memo.pickle", b"\x80\x02h\x07.")

# Checkpoints: the first byte asks the harness to append the checksum (odd)
# or not (even: then the file carries its own).
def fnv1a(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def checkpoint_body(values, budget=""):
    settings = {"model": "resnet20", "dataset": "generated", "data_dir": "", "batch_size": 32, "epochs": 1,
                "iterations": 0, "lr": 0.1, "lr_schedule": "cosine", "momentum": 0.9, "weight_decay": 0.0005,
                "seed": 1, "device": "cpu", "compress_threads": 0, "heuristic": "best-fit", "algo": "p",
                "mode": "base", "transfer": "async", "order": "prefetch-first", "lookahead": 0, "compress": False,
                "swap_score": "swdoa", "budget": budget, "link_gbps": 0.0, "trace_iterations": 5}
    header = json.dumps({"options": settings, "epoch": 0, "batch_in_epoch": 3, "iteration": 3,
                         "values": len(values)}, separators=(",", ":")).encode()
    return b"TIDEPCK1" + struct.pack("<Q", len(header)) + header + b"".join(struct.pack("<f", v) for v in values)


for name, body in [("three_values", checkpoint_body([0.5, -1.0, 2.0])),
                   ("budget", checkpoint_body([1.0], "64MiB")),
                   ("no_values", checkpoint_body([])),
                   ("many_values", checkpoint_body([float(i) / 7 for i in range(64)]))]:
    put("checkpoint", name + "_checksummed", b"\x00" + body + struct.pack("<Q", fnv1a(body)))
    put("checkpoint", name + "_body", b"\x01" + body)

# Sizes, as --budget takes them.
for i, text in enumerate(["900MiB", "1.5GiB", "512MB", "64KiB", "1e9", "123456", "2 G", "0.25KB"]):
    put("bytes", str(i), text.encode())
