// Every test binary caps oneDNN at AVX2 before main, unless the caller
// chose an ISA (ONEDNN_MAX_CPU_ISA or DNNL_MAX_CPU_ISA already set). The
// figures tests assert (plans, minimum budgets, peaks, where blocks park)
// depend on the activation layout oneDNN's convolutions pick: nChw8c on
// AVX2, nChw16c on AVX-512, where an 8-channel test network stays NCHW and
// its convolutions reorder into workspaces instead. Capped, they are the
// same on every x86 machine CI may get. The variable, unlike oneDNN's
// set_max_cpu_isa, reaches the tidepool processes the tests start too.
// `ONEDNN_MAX_CPU_ISA=ALL` runs the suite on the machine's own kernels.
#include <cstdlib>

namespace {

const bool kIsaCapped = [] {
  if (std::getenv("ONEDNN_MAX_CPU_ISA") == nullptr && std::getenv("DNNL_MAX_CPU_ISA") == nullptr)
    setenv("ONEDNN_MAX_CPU_ISA", "AVX2", 0);
  return true;
}();

}  // namespace
