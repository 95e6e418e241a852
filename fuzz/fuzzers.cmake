# Included by the top-level CMakeLists.txt: builds fuzz/ (its own project,
# compiled with clang, which libFuzzer needs) into <build>/fuzz as the
# target tidepool_fuzzers, part of the default build, and registers a short
# deterministic run of every fuzzer as a test (label `fuzz`).
#
# On in every build that is not itself a sanitizer build (asan, tsan):
# it needs clang++ that links -fsanitize=fuzzer,address,undefined (Debian:
# clang and libclang-rt-14-dev, which scripts/install-deps.sh installs), and
# a first configure without one fails, naming them, rather than leave the
# fuzz tests out without a word; -DTIDEPOOL_FUZZ=OFF builds without them.
set(_fuzz_default OFF)
if(NOT CMAKE_CXX_FLAGS MATCHES "-fsanitize")
  find_program(TIDEPOOL_CLANGXX NAMES clang++ clang++-16 clang++-15 clang++-14)
  if(TIDEPOOL_CLANGXX)
    set(_probe "${CMAKE_BINARY_DIR}/CMakeFiles/fuzz_probe.cpp")
    file(WRITE "${_probe}" "#include <cstddef>\n#include <cstdint>\n"
         "extern \"C\" int LLVMFuzzerTestOneInput(const std::uint8_t*, std::size_t) { return 0; }\n")
    execute_process(COMMAND ${TIDEPOOL_CLANGXX} -fsanitize=fuzzer,address,undefined "${_probe}"
                            -o "${CMAKE_BINARY_DIR}/CMakeFiles/fuzz_probe"
                    RESULT_VARIABLE _probe_status OUTPUT_QUIET ERROR_QUIET)
    if(_probe_status EQUAL 0)
      set(_fuzz_default ON)
    endif()
  endif()
  if(NOT _fuzz_default AND NOT DEFINED TIDEPOOL_FUZZ)
    message(FATAL_ERROR "The fuzz tests need clang++ that links -fsanitize=fuzzer,address,undefined "
                        "(${TIDEPOOL_CLANGXX} does not): scripts/install-deps.sh installs clang and "
                        "libclang-rt-14-dev. Configure with -DTIDEPOOL_FUZZ=OFF to build without them.")
  endif()
endif()
option(TIDEPOOL_FUZZ "Build the libFuzzer targets (fuzz/) with clang and test each briefly" ${_fuzz_default})
message(STATUS "Fuzzers: ${TIDEPOOL_FUZZ}")
if(NOT TIDEPOOL_FUZZ)
  return()
endif()
if(NOT TIDEPOOL_CLANGXX)
  message(FATAL_ERROR "TIDEPOOL_FUZZ needs clang++ with libFuzzer (install clang and libclang-rt-14-dev)")
endif()

include(ExternalProject)
set(_fuzz_args -DCMAKE_CXX_COMPILER=${TIDEPOOL_CLANGXX} -DCMAKE_BUILD_TYPE=RelWithDebInfo)
if(CMAKE_CXX_COMPILER_LAUNCHER)
  list(APPEND _fuzz_args -DCMAKE_CXX_COMPILER_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER})
endif()
ExternalProject_Add(tidepool_fuzzers
  SOURCE_DIR ${PROJECT_SOURCE_DIR}/fuzz
  BINARY_DIR ${CMAKE_BINARY_DIR}/fuzz
  CMAKE_ARGS ${_fuzz_args}
  BUILD_ALWAYS ON  # its own build decides what is out of date (the parsers' sources live outside fuzz/)
  INSTALL_COMMAND "")

# Each fuzzer from a fresh folder with a fixed seed and a fixed number of
# inputs, so a run is the same every time (no time limit): the seeds, the
# crash regressions among them, then new inputs for a few seconds' worth.
if(TIDEPOOL_TESTS)
  file(GLOB _fuzzers CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/fuzz/*_fuzzer.cpp)
  foreach(_source ${_fuzzers})
    get_filename_component(_name ${_source} NAME_WE)
    string(REGEX REPLACE "_fuzzer$" "" _short ${_name})
    add_test(NAME fuzz.${_short}
             COMMAND ${PROJECT_SOURCE_DIR}/fuzz/run.sh ${CMAKE_BINARY_DIR}/fuzz/${_name}
                     ${PROJECT_SOURCE_DIR}/fuzz/corpus/${_short} ${CMAKE_BINARY_DIR}/fuzz-work/ctest/${_short}
                     -seed=1 -runs=${TIDEPOOL_FUZZ_RUNS})
    set_tests_properties(fuzz.${_short} PROPERTIES LABELS fuzz TIMEOUT 300)
  endforeach()
endif()
