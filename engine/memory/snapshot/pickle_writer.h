// A Python pickle writer for plain data: the counterpart of
// engine/memory/snapshot/pickle_reader.h, so that Tidepool can write files
// in the form PyTorch's tools read (`tidepool export --pytorch-snapshot`
// writes a run as a memory snapshot that pytorch.org/memory_viz opens).
//
//   PlainData snapshot = snapshot_data(run_snapshot(folder));
//   std::string bytes = write_pickle(snapshot);   // what pickle.dumps(d, protocol=4) would hold
//
// It writes protocol 4, the protocol torch.cuda.memory._dump_snapshot uses
// (pickle.DEFAULT_PROTOCOL up to Python 3.13), and only the opcodes of
// plain data: None, bool, int (any 64-bit value, signed or not), float,
// str, bytes, list, tuple, set, dict. Nothing that names or calls a Python
// object is ever written, so the file is as safe to load as the data is.
//
// Every string and container goes into the memo as Python's pickler puts
// it (MEMOIZE), and a value reached again is written as a reference to it
// (BINGET/LONG_BINGET): a graph whose containers are shared (a snapshot
// shares one frames list between every entry of a call site) stays as
// small as the graph, and pickle.loads rebuilds the sharing. No FRAME
// opcodes: they are optional for every reader (they let a reader prefetch),
// and leaving them out keeps the writer one pass.
#pragma once

#include <string>

#include "engine/memory/snapshot/plain_data.h"

namespace tidepool {

// The pickle of `data`'s root. Throws std::invalid_argument for a graph
// that pickle cannot rebuild as written: containers nested deeper than
// `max_depth` or a container that contains itself (nesting_problem), and a
// dict key that is a container.
std::string write_pickle(const PlainData& data, int max_depth = PlainDataLimits{}.max_depth);

}  // namespace tidepool
