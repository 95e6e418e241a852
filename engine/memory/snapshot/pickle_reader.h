// A Python pickle reader that executes nothing: it reads the plain data that
// pickle protocols 2 to 5 write for dicts, lists, tuples, str, bytes, ints,
// floats, bools and None, and refuses everything else. PyTorch's memory
// snapshots (`torch.cuda.memory._dump_snapshot`) are such plain data: one
// dict of lists of dicts of strings and ints (engine/memory/snapshot/
// pytorch_snapshot.h), so Tidepool reads them without Python and without
// the risk of Python's own unpickler, which runs any code a file names.
//
//   std::string bytes = ...;                       // the file's contents
//   PlainData snapshot = read_pickle(bytes, "snap.pickle");
//
// It returns the value graph of engine/memory/snapshot/plain_data.h: None,
// bool, int (-2^63 .. 2^64-1; larger is refused), float, str (valid
// UTF-8), bytes and bytearray (bytes), list, tuple, set and frozenset
// (set), dict. Dict keys are str, int, bool or None, the keys json.dump
// can write; any other (float, bytes, tuple) is refused. A value
// referenced twice (the memo: PUT/BINPUT/LONG_BINPUT/MEMOIZE, GET/BINGET/
// LONG_BINGET) is one value of the graph, as in Python: items appended to
// a container after it was memoized are seen by every reference.
// plain_data_json() expands it into the tree json.dump would write.
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
// A pickle of protocol 0 or 1 (no PROTO opcode first) is refused at its
// first opcode ("byte 0: no PROTO opcode (0x80) first: a pickle of
// protocol 0 or 1, ..."), unless that opcode is one that runs code, which
// is named as above.
//
// Also refused, each as std::invalid_argument "<source>: byte N: ...":
// input that ends before STOP, a memo index that was never stored, an
// opcode with too few values on the stack (or a MARK missing), and
// memory past PlainDataLimits::max_memory_bytes (the graph and the
// reader's stack, marks and memo, counted after each opcode). What STOP
// returns is then checked as a whole: nesting deeper than
// PlainDataLimits::max_depth, counted as the tree json.dump would write,
// and a container that contains itself are refused as "<source>: in the
// value STOP returns at byte N: ...". Bytes after STOP are ignored, as
// pickle.loads does.
#pragma once

#include <string>
#include <string_view>

#include "engine/memory/snapshot/plain_data.h"

namespace tidepool {

// Reads one pickle from `bytes`; `source` names it in error messages.
PlainData read_pickle(std::string_view bytes, const std::string& source, const PlainDataLimits& limits = {});

// read_pickle, expanded by plain_data_json (small data: tests and tools).
nlohmann::json read_pickle_json(std::string_view bytes, const std::string& source, const PlainDataLimits& limits = {});

}  // namespace tidepool
