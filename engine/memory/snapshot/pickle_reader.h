// A Python pickle reader that executes nothing: it reads the plain data that
// pickle protocols 2 to 5 write for dicts, lists, tuples, str, bytes, ints,
// floats, bools and None, and refuses everything else. PyTorch's memory
// snapshots (`torch.cuda.memory._dump_snapshot`) are such plain data: one
// dict of lists of dicts of strings and ints (engine/memory/snapshot/
// pytorch_snapshot.h), so Tidepool reads them without Python and without
// the risk of Python's own unpickler, which runs any code a file names.
//
//   std::string bytes = ...;                       // the file's contents
//   nlohmann::json snapshot = read_pickle(bytes, "snap.pickle");
//
// What it reads, as JSON:
//   None -> null, bool -> boolean, int -> integer (-2^63 .. 2^64-1; larger
//   is refused), float -> number, str -> string (valid UTF-8), bytes and
//   bytearray -> binary, list and tuple -> array, set and frozenset ->
//   array, dict -> object.
//   Dict keys: str as it is; int, bool and None as json.dump writes them
//   ("12", "true", "null"), so a pickle and the JSON that json.dump writes
//   for the same object read the same. Any other key (float, bytes, tuple)
//   is refused.
//   A value referenced twice (the memo: PUT/BINPUT/LONG_BINPUT/MEMOIZE,
//   GET/BINGET/LONG_BINGET) is copied into each place, as json.dump does;
//   a container that contains itself is refused.
//
// Opcodes read: PROTO (versions 2 to 5), FRAME, STOP, MARK, POP, POP_MARK,
// DUP, NONE, NEWTRUE, NEWFALSE, BININT, BININT1, BININT2, LONG1, LONG4,
// BINFLOAT, BINUNICODE, SHORT_BINUNICODE, BINUNICODE8, BINBYTES,
// SHORT_BINBYTES, BINBYTES8, BYTEARRAY8, EMPTY_LIST, APPEND, APPENDS, LIST,
// EMPTY_TUPLE, TUPLE, TUPLE1, TUPLE2, TUPLE3, EMPTY_DICT, DICT, SETITEM,
// SETITEMS, EMPTY_SET, ADDITEMS, FROZENSET and the memo opcodes above.
//
// Refused, with the byte offset and the opcode named
// ("snap.pickle: byte 123: opcode REDUCE (0x52) would run code; Tidepool
// reads only plain data"): GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ,
// NEWOBJ, NEWOBJ_EX, PERSID, BINPERSID, EXT1/2/4 (each names or calls a
// Python object), the out-of-band buffers of protocol 5, and protocol 0/1's
// text opcodes and Python 2's byte strings, which Python 3 does not write
// at protocol 2 and above. Protocol 2 writes `bytes` as a call to
// _codecs.encode, so a protocol 2 pickle with bytes in it is refused too
// (PyTorch's snapshots hold none).
//
// Also refused, each as std::invalid_argument "<source>: byte N: ...":
// input that ends before STOP, a memo index that was never stored, an
// opcode with too few values on the stack (or a MARK missing), nesting
// deeper than PickleLimits::max_depth, and a result that would expand past
// PickleLimits::max_output_bytes (a small file that references one big
// value many times). Bytes after STOP are ignored, as pickle.loads does.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace tidepool {

struct PickleLimits {
  // Containers inside containers, counted from the outermost (a snapshot
  // nests five deep: snapshot, device_traces, a device's trace, an entry,
  // its frames, a frame).
  int max_depth = 100;
  // What the result may hold, counted as 16 bytes a value plus the bytes of
  // its strings: a guard against a small file that expands to a huge one.
  std::size_t max_output_bytes = std::size_t{4} << 30;
};

// Reads one pickle from `bytes`; `source` names it in error messages.
nlohmann::json read_pickle(std::string_view bytes, const std::string& source, const PickleLimits& limits = {});

}  // namespace tidepool
