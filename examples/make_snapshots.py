#!/usr/bin/env python3
"""Writes small PyTorch memory snapshots in PyTorch's exact structure, with
the standard library only (pickle, json), for `tidepool replay` and its
tests:

  resnet_snapshot.pickle      a ResNet-like training loop on two streams (a
                              side stream copies the next batch in), frames
                              on every entry recorded with a context, the
                              ring buffer started mid-run (max_entries);
                              pickle protocol 4
  resnet_snapshot_p2.pickle   the same snapshot, pickle protocol 2
  resnet_snapshot.json        the same snapshot, as json.dump writes
                              torch.cuda.memory._snapshot()
  oom_snapshot.pickle         a complete trace (every segment_alloc in it):
                              batches that grow until one does not fit the
                              device: the allocator completes the pending
                              frees, frees its cached segments, retries,
                              records an `oom`; the loop catches it and goes
                              on with a smaller batch (protocol 5)
  two_stream_snapshot.pickle  a complete trace without an oom: three steps on
                              two streams, the last batch freed after the
                              compute stream read it (a pending free), then
                              torch.cuda.empty_cache() (protocol 4)

and, not committed, `make_snapshots.py --big EVENTS FILE`: the resnet loop
run long enough for a trace of at least EVENTS allocs and frees, for
bench/bench_snapshot_view.cpp (protocol 4).

torch.cuda.memory._dump_snapshot pickles with pickle.DEFAULT_PROTOCOL,
which is 4 from Python 3.8 to 3.13 and 5 from Python 3.14; the protocols
here are given explicitly, so the files do not change with the Python that
runs this.

Only a complete trace (one whose ring buffer held the whole run, from the
first segment_alloc) can be checked segment event by segment event against
a model of the allocator: a trace that starts mid-run (resnet_snapshot)
begins with segments whose history it does not have.

The events come from a model of PyTorch's CUDACachingAllocator below that
follows its documented rules, so each file is what PyTorch would write for
those requests: the same segment_alloc/segment_free sequence, the same
addresses relative to each segment.

Rules these examples exercise: 512-byte rounding (round_size), the small
and large pools and their segment sizes (get_allocation_size), best fit per
stream and pool (get_free_block), splitting (should_split), merging on free
(free_block), frees that wait on another stream (recordStream: free_requested,
then free_completed), and before an oom or in empty_cache,
release_cached_blocks: synchronize_and_free_events (the waiting frees
complete and merge), then release_blocks(large_blocks) and
release_blocks(small_blocks), each in (stream, size, address) order.

Rules they never exercise, so an implementation is not checked on them:
  - max_split_size_mb: oversize blocks (never split, not given to much
    smaller requests) and release_available_cached_blocks before
    release_cached_blocks;
  - roundup_power2_divisions (rounding of large requests to power-of-two
    divisions);
  - expandable_segments: segment_map/segment_unmap of one growing segment
    per stream and pool;
  - process_events at the start of malloc: here a waiting free completes
    only at the end of its step or in release_cached_blocks, never because
    its event finished before a later malloc looked;
  - garbage_collection_threshold, CUDA graph private pools, and more than
    one device. Run it again to rewrite them;
`--check` rewrites them in a temporary folder and fails unless they come
out byte for byte the same as the committed ones (a test does this).

The structure (torch/cuda/memory.py, _snapshot's docstring):
  {"segments": [{"device", "address", "total_size", "allocated_size",
                 "active_size", "requested_size", "stream", "segment_type",
                 "segment_pool_id", "is_expandable", "frames",
                 "blocks": [{"address", "size", "requested_size", "state",
                             "frames"}]}],
   "device_traces": [[{"action", "addr", "size", "stream", "time_us",
                       "frames": [{"filename", "line", "name"}]}]],
   "allocator_settings": {...}}
"""
import filecmp
import json
import os
import pickle
import sys
import tempfile
from collections import deque

# c10/cuda/CUDACachingAllocator.cpp's constants:
kMinBlockSize = 512          # "all sizes are rounded to at least 512 bytes"
kSmallSize = 1048576         # "largest 'small' allocation is 1 MiB"
kSmallBuffer = 2097152       # "'small' allocations are packed in 2 MiB blocks"
kLargeBuffer = 20971520      # "'large' allocations may be packed in 20 MiB blocks"
kMinLargeAlloc = 10485760    # "allocations between 1 and 10 MiB may use kLargeBuffer"
kRoundLarge = 2097152        # "round up large allocations to 2 MiB"

MiB = 1 << 20
SEGMENT_BASE = 0x7F0000000000  # where the model's "cudaMalloc" starts handing out addresses


class OutOfMemory(Exception):
    pass


class Block:
    def __init__(self, ptr, size, stream, pool, segment):
        self.ptr, self.size, self.stream, self.pool, self.segment = ptr, size, stream, pool, segment
        self.requested = 0
        self.allocated = False
        self.pending_free = False  # freed by the program, used by another stream: not reusable yet
        self.frames = []
        self.prev = self.next = None


class CachingAllocatorModel:
    """One device of CUDACachingAllocator, by its documented rules (the
    comment at the top of CUDACachingAllocator.cpp and the functions named
    below). Left out (the rules never exercised, above): max_split_size_mb
    (unset by default, so no oversize rules and release_available_cached_blocks
    frees nothing), expandable_segments, roundup_power2_divisions,
    process_events, CUDA graph pools."""

    def __init__(self, device_bytes, max_entries):
        self.device_bytes = device_bytes  # what "cudaMalloc" can hand out in all
        self.reserved = 0
        self.next_address = SEGMENT_BASE
        self.free_blocks = {"small": [], "large": []}  # cached free blocks per pool
        self.segments = []  # head blocks, in the order they were allocated
        self.waiting = []  # pending frees, in the order their events were recorded (cuda_events)
        self.trace = deque(maxlen=max_entries)  # _record_memory_history(max_entries=...): a ring buffer
        self.clock = 1_700_000_000_000_000

    def record(self, action, addr, size, stream, frames, **extra):
        self.clock += 37  # time_us: any increasing clock will do
        entry = {"action": action, "addr": addr, "size": size, "stream": stream, "time_us": self.clock}
        if action == "oom":
            del entry["addr"]  # an oom has no address, but device_free
        entry.update(extra)
        if frames is not None:  # PyTorch writes frames only for an entry recorded with a context
            entry["frames"] = frames
        self.trace.append(entry)

    @staticmethod
    def round_size(size):  # round_size()
        return kMinBlockSize if size < kMinBlockSize else kMinBlockSize * ((size + kMinBlockSize - 1) // kMinBlockSize)

    @staticmethod
    def allocation_size(size):  # get_allocation_size(): how big a segment a miss asks cudaMalloc for
        if size <= kSmallSize:
            return kSmallBuffer
        if size < kMinLargeAlloc:
            return kLargeBuffer
        return kRoundLarge * ((size + kRoundLarge - 1) // kRoundLarge)

    @staticmethod
    def should_split(block, size):  # should_split()
        remaining = block.size - size
        return remaining >= kMinBlockSize if block.pool == "small" else remaining > kSmallSize

    def best_fit(self, pool, size, stream):
        # get_free_block(): the blocks are ordered by (stream, size, address);
        # the first at or above the request on the same stream is the smallest that fits.
        fits = [b for b in self.free_blocks[pool] if b.stream == stream and b.size >= size]
        return min(fits, key=lambda b: (b.size, b.ptr)) if fits else None

    def cuda_malloc(self, size, stream, pool, frames):  # alloc_block()
        if self.reserved + size > self.device_bytes:
            return None
        ptr = self.next_address
        self.next_address += size
        self.reserved += size
        block = Block(ptr, size, stream, pool, ptr)
        block.segment_frames = frames
        self.segments.append(block)
        self.record("segment_alloc", ptr, size, stream, frames)
        return block

    def release_cached_blocks(self, frames):  # release_cached_blocks(): empty_cache, and on the way to an oom
        # synchronize_and_free_events(): every free waiting on another stream completes first (and merges).
        for b in list(self.waiting):
            self.free_block(b, frames)
        # release_blocks(large_blocks), then release_blocks(small_blocks): each pool's cached blocks in its
        # order, (stream, size, address), the ones that are a whole segment given back.
        for pool in ("large", "small"):
            for head in sorted(self.free_blocks[pool], key=lambda b: (b.stream, b.size, b.ptr)):
                if head.prev is None and head.next is None:
                    self.free_blocks[pool].remove(head)
                    self.segments.remove(head)
                    self.reserved -= head.size
                    self.record("segment_free", head.ptr, head.size, head.stream, frames)



    def malloc(self, requested, stream, frames):
        size = self.round_size(requested)
        pool = "small" if size <= kSmallSize else "large"
        block = self.best_fit(pool, size, stream)
        if block is not None:
            self.free_blocks[pool].remove(block)
        else:
            alloc_size = self.allocation_size(size)
            block = self.cuda_malloc(alloc_size, stream, pool, frames)
            if block is None:  # free every cached segment and try once more, then give up
                self.release_cached_blocks(frames)
                block = self.cuda_malloc(alloc_size, stream, pool, frames)
            if block is None:
                self.record("oom", None, size, stream, frames, device_free=self.device_bytes - self.reserved)
                raise OutOfMemory(requested)
        if self.should_split(block, size):  # alloc_found_block(): the front is handed out, the rest stays cached
            rest = Block(block.ptr + size, block.size - size, stream, pool, block.segment)
            rest.prev, rest.next = block, block.next
            if block.next:
                block.next.prev = rest
            block.next = rest
            block.size = size
            self.free_blocks[pool].append(rest)
        block.allocated, block.requested, block.frames = True, requested, frames
        self.record("alloc", block.ptr, requested, stream, frames)
        return block

    def free(self, block, frames, used_on_other_stream=False):
        block.allocated = False
        self.record("free_requested", block.ptr, block.requested, block.stream, frames)
        if used_on_other_stream:  # recordStream(): reusable only once that stream's work is done
            block.pending_free = True
            self.waiting.append(block)
        else:
            self.free_block(block, frames)

    def free_block(self, block, frames):  # free_block(): merge with free neighbours, cache
        if block.pending_free:
            self.waiting.remove(block)
        block.pending_free = False
        self.record("free_completed", block.ptr, block.requested, block.stream, frames)
        for neighbour in (block.prev, block.next):
            if neighbour is not None and not neighbour.allocated and not neighbour.pending_free:
                self.free_blocks[block.pool].remove(neighbour)
                if neighbour is block.prev:
                    neighbour.size += block.size
                    neighbour.next = block.next
                    if block.next:
                        block.next.prev = neighbour
                    block = neighbour
                else:
                    block.size += neighbour.size
                    block.next = neighbour.next
                    if neighbour.next:
                        neighbour.next.prev = block
        block.requested = 0
        self.free_blocks[block.pool].append(block)

    def snapshot(self, device=0):
        """torch.cuda.memory._snapshot() of this device."""
        segments = []
        for head in sorted(self.segments, key=lambda b: b.ptr):
            blocks, b = [], head
            while b is not None:
                state = "active_allocated" if b.allocated else "active_pending_free" if b.pending_free else "inactive"
                blocks.append({"address": b.ptr, "size": b.size, "requested_size": b.requested, "state": state,
                               "frames": b.frames if state != "inactive" else []})
                b = b.next
            total = sum(x["size"] for x in blocks)
            allocated = sum(x["size"] for x in blocks if x["state"] == "active_allocated")
            active = sum(x["size"] for x in blocks if x["state"] != "inactive")
            segments.append({"device": device, "address": head.ptr, "total_size": total, "stream": head.stream,
                             "segment_type": head.pool, "segment_pool_id": (0, 0), "allocated_size": allocated,
                             "active_size": active,
                             "requested_size": sum(x["requested_size"] for x in blocks), "is_expandable": False,
                             "frames": head.segment_frames, "blocks": blocks})
        # _snapshot() records its own entry: size is the bytes active then.
        self.record("snapshot", 0, sum(s["active_size"] for s in segments), 0, None)  # no context: no frames
        return segments, list(self.trace)


# --- the workload: call stacks, innermost first, shared per call site as PyTorch shares them ---

TORCH = "/usr/lib/python3/dist-packages/torch"
ALLOCATOR_FRAME = {"filename": "??", "line": 0,
                   "name": "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc"}
_stacks = {}


def stack(*user_frames, torch_frames=()):
    """One frames list per call site, reused (pickle memoizes it, as it does PyTorch's)."""
    key = (user_frames, torch_frames)
    if key not in _stacks:
        frames = [ALLOCATOR_FRAME]
        frames += [{"filename": f"{TORCH}/{f}", "line": line, "name": name} for f, line, name in torch_frames]
        frames += [{"filename": f"/home/user/{f}", "line": line, "name": name} for f, line, name in user_frames]
        frames += [{"filename": "/usr/lib/python3.11/runpy.py", "line": 88, "name": "_run_code"}]
        _stacks[key] = frames
    return _stacks[key]


MAIN = ("train.py", 120, "<module>")
STEP = ("train.py", 96, "train_step")
CONV = (("nn/modules/conv.py", 456, "_conv_forward"), ("nn/modules/module.py", 1527, "_call_impl"))
BACKWARD = (("autograd/graph.py", 744, "_engine_run_backward"), ("_tensor.py", 522, "backward"))
OPTIM = (("optim/sgd.py", 302, "_single_tensor_sgd"), ("optim/optimizer.py", 385, "wrapper"))
COMPUTE, COPY = 0, 0x5601A2B3C4D0  # the default stream and a side stream's handle

# A ResNet-like network at a small scale: (name, parameter bytes, activation bytes per image)
LAYERS = [("conv1", 1728 * 4, 16 * 32 * 32 * 4), ("layer1.0.conv1", 2304 * 4, 16 * 32 * 32 * 4),
          ("layer1.0.conv2", 2304 * 4, 16 * 32 * 32 * 4), ("layer2.0.conv1", 4608 * 4, 32 * 16 * 16 * 4),
          ("layer2.0.conv2", 9216 * 4, 32 * 16 * 16 * 4), ("layer3.0.conv1", 18432 * 4, 64 * 8 * 8 * 4),
          ("layer3.0.conv2", 36864 * 4, 64 * 8 * 8 * 4), ("fc", 64 * 10 * 4 + 40, 10 * 4)]


def train(model, iterations, batch_of, catch_oom=False):
    """model.cuda(), then `iterations` steps: the next batch copied in on a side stream, forward, backward
    (gradients set to None by zero_grad), an SGD step with momentum buffers made on the first step."""
    params = [model.malloc(p, COMPUTE, stack(("model.py", 40 + i, "__init__"), MAIN)) for i, (_, p, _) in enumerate(LAYERS)]
    momentum = []
    batch = None
    for it in range(iterations):
        n = batch_of(it)
        acts, grads = [], []
        try:
            # The next batch, copied in on the side stream; the last one was read on the compute stream
            # (record_stream), so its free completes only once that stream is past it.
            new_batch = model.malloc(n * 3 * 32 * 32 * 4, COPY, stack(("data.py", 58, "prefetch"), MAIN))
            if batch is not None:
                model.free(batch, stack(("data.py", 61, "prefetch"), MAIN), used_on_other_stream=True)
            batch = new_batch
            for i, (name, _, act) in enumerate(LAYERS):
                acts.append(model.malloc(n * act, COMPUTE, stack(("model.py", 70 + i, "forward"), STEP, MAIN,
                                                                torch_frames=CONV)))
            for i in reversed(range(len(LAYERS))):
                grads.append(model.malloc(LAYERS[i][1], COMPUTE, stack(STEP, MAIN, torch_frames=BACKWARD)))
                model.free(acts.pop(), stack(STEP, MAIN, torch_frames=BACKWARD))
            if not momentum:
                momentum = [model.malloc(p, COMPUTE, stack(("train.py", 80, "make_optimizer"), STEP, MAIN,
                                                           torch_frames=OPTIM)) for _, p, _ in LAYERS]
            for g in grads:
                model.free(g, stack(("train.py", 99, "zero_grad"), STEP, MAIN))
        except OutOfMemory:
            if not catch_oom:
                raise
            for a in reversed(acts):  # the loop gives the step up and frees what it made
                model.free(a, stack(("train.py", 104, "on_oom"), MAIN))
            for g in grads:
                model.free(g, stack(("train.py", 104, "on_oom"), MAIN))
        for b in list(model.waiting):  # the compute stream is past the step: deferred frees complete
            model.free_block(b, stack(("data.py", 61, "prefetch"), MAIN))
    return params, momentum, batch


def snapshot_of(model):
    segments, trace = model.snapshot()
    return {"segments": segments, "device_traces": [trace],
            "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1, "expandable_segments": False}}


def resnet_snapshot():
    model = CachingAllocatorModel(device_bytes=16 << 30, max_entries=200)  # the first entries fall off the ring
    train(model, iterations=6, batch_of=lambda it: 64 if it < 4 else 96)
    return snapshot_of(model)


def two_stream_snapshot():
    """A whole run in the ring buffer, from its first segment_alloc: training on two streams, then the
    last batch freed after the compute stream read it and torch.cuda.empty_cache()."""
    model = CachingAllocatorModel(device_bytes=16 << 30, max_entries=100000)
    params, momentum, batch = train(model, iterations=3, batch_of=lambda it: 32)
    model.free(batch, stack(("data.py", 61, "prefetch"), MAIN), used_on_other_stream=True)
    model.release_cached_blocks(stack(("train.py", 131, "<module>"), torch_frames=(("cuda/memory.py", 192, "empty_cache"),)))
    return snapshot_of(model)


def oom_snapshot():
    model = CachingAllocatorModel(device_bytes=120 * MiB, max_entries=100000)
    train(model, iterations=6, batch_of=lambda it: [64, 128, 256, 512, 256, 128][it], catch_oom=True)
    return snapshot_of(model)


def big_snapshot(events):
    """The resnet loop until its trace has `events` allocs and frees (34 a step), the whole run kept."""
    _stacks.clear()
    model = CachingAllocatorModel(device_bytes=16 << 30, max_entries=4 * events)
    train(model, iterations=events // 34 + 1, batch_of=lambda it: 64)
    return snapshot_of(model)


def write(folder):
    _stacks.clear()
    resnet = resnet_snapshot()
    with open(os.path.join(folder, "resnet_snapshot.pickle"), "wb") as f:
        pickle.dump(resnet, f, protocol=4)
    with open(os.path.join(folder, "resnet_snapshot_p2.pickle"), "wb") as f:
        pickle.dump(resnet, f, protocol=2)
    with open(os.path.join(folder, "resnet_snapshot.json"), "w") as f:
        json.dump(resnet, f, separators=(",", ":"))
    with open(os.path.join(folder, "oom_snapshot.pickle"), "wb") as f:
        pickle.dump(oom_snapshot(), f, protocol=5)
    with open(os.path.join(folder, "two_stream_snapshot.pickle"), "wb") as f:
        pickle.dump(two_stream_snapshot(), f, protocol=4)


NAMES = ["resnet_snapshot.pickle", "resnet_snapshot_p2.pickle", "resnet_snapshot.json", "oom_snapshot.pickle",
         "two_stream_snapshot.pickle"]

if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.argv[1:2] == ["--big"] and len(sys.argv) == 4:
        with open(sys.argv[3], "wb") as f:
            pickle.dump(big_snapshot(int(sys.argv[2])), f, protocol=4)
    elif sys.argv[1:] == ["--check"]:
        with tempfile.TemporaryDirectory() as tmp:
            write(tmp)
            differ = [n for n in NAMES if not filecmp.cmp(os.path.join(tmp, n), os.path.join(here, n), shallow=False)]
        if differ:
            sys.exit("examples/make_snapshots.py writes other bytes than the committed " + ", ".join(differ) +
                     ": run it and commit what it writes")
        print("the committed snapshots are what make_snapshots.py writes")
    else:
        write(here)
