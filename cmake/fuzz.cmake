# libFuzzer targets (DQG_FUZZ=ON): the library is built with coverage
# instrumentation and ASan/UBSan, and every fuzz/fuzz_*.c becomes one
# executable linked with libFuzzer's main. Clang only: GCC has no libFuzzer.
# Build with scripts/fuzz.sh, or:
#   CC=clang CXX=clang++ cmake -B build-fuzz -DDQG_FUZZ=ON -DDQG_BUILD_TESTS=OFF ...
#   cmake --build build-fuzz --target dqg_fuzz
if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR
    "DQG_FUZZ=ON needs Clang as the C compiler (libFuzzer is part of Clang), but "
    "CMAKE_C_COMPILER is ${CMAKE_C_COMPILER} (${CMAKE_C_COMPILER_ID}). Configure a fresh "
    "build folder with CC=clang CXX=clang++ (see scripts/fuzz.sh).")
endif()

# UBSan findings must stop the run (libFuzzer then saves the input), not just
# print a line and continue.
set(DQG_FUZZ_SAN_FLAGS -fno-omit-frame-pointer -fno-sanitize-recover=all)

# dqgraph's sources are written for GCC; two things need help under Clang 14
# (without editing them): GCC's optimize("...") attribute is ignored (a
# warning, an error under -Werror), and __builtin_cpu_supports("f16c") is not
# known to Clang 14, so fuzz/clang_compat.h is force-included to answer it.
target_compile_options(dqgraph PRIVATE -Wno-unknown-attributes
                       "SHELL:-include ${PROJECT_SOURCE_DIR}/fuzz/clang_compat.h")

# The library: coverage instrumentation without libFuzzer's main, plus the
# sanitizers. The link options are PUBLIC so that every program linking the
# static library (the tool included) gets the sanitizer runtimes.
target_compile_options(dqgraph PRIVATE -fsanitize=fuzzer-no-link,address,undefined
                       ${DQG_FUZZ_SAN_FLAGS})
target_link_options(dqgraph PUBLIC -fsanitize=fuzzer-no-link,address,undefined)
# The generated protobuf-c tables are linked into the library: sanitizers only
# (no dqgraph warning flags, no coverage of generated tables).
target_compile_options(dqgraph_onnx_proto PRIVATE -fsanitize=address,undefined
                       ${DQG_FUZZ_SAN_FLAGS})

add_custom_target(dqg_fuzz)
file(GLOB _fuzz_srcs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/fuzz/fuzz_*.c)
foreach(_src ${_fuzz_srcs})
  get_filename_component(_name ${_src} NAME_WE)
  add_executable(${_name} ${_src})
  # LLVMFuzzerTestOneInput and LLVMFuzzerInitialize have no prototype in any
  # header dqgraph ships.
  target_compile_options(${_name} PRIVATE ${DQG_WARNINGS} -Wno-missing-prototypes
                         -fsanitize=fuzzer,address,undefined ${DQG_FUZZ_SAN_FLAGS})
  target_link_options(${_name} PRIVATE -fsanitize=fuzzer,address,undefined)
  target_compile_definitions(${_name} PRIVATE _GNU_SOURCE)
  target_include_directories(${_name} PRIVATE ${PROJECT_SOURCE_DIR} ${DQG_ONNX_GEN_DIR})
  target_link_libraries(${_name} PRIVATE dqgraph ${MATH_LIBRARY})
  # A target that includes onnx.pb-c.h itself also links protobuf-c.
  file(READ ${_src} _text)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_src})
  if(_text MATCHES "onnx\\.pb-c\\.h")
    target_link_libraries(${_name} PRIVATE PkgConfig::PROTOBUF_C)
  endif()
  add_dependencies(${_name} dqgraph_onnx_proto)
  add_dependencies(dqg_fuzz ${_name})
endforeach()
