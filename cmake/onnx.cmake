# The ONNX front end: C code for onnx.proto is generated at configure/build
# time by protobuf-c from the schema Debian's libonnx-dev installs; neither
# the schema nor the generated code is part of the source tree.
pkg_check_modules(PROTOBUF_C REQUIRED IMPORTED_TARGET libprotobuf-c)
find_program(PROTOC_C protoc-c REQUIRED)
find_file(DQG_ONNX_PROTO onnx.proto PATHS /usr/include/onnx NO_DEFAULT_PATH REQUIRED)
get_filename_component(_proto_dir ${DQG_ONNX_PROTO} DIRECTORY)

set(DQG_ONNX_GEN_DIR ${CMAKE_BINARY_DIR}/generated)
file(MAKE_DIRECTORY ${DQG_ONNX_GEN_DIR})
add_custom_command(
  OUTPUT ${DQG_ONNX_GEN_DIR}/onnx.pb-c.c ${DQG_ONNX_GEN_DIR}/onnx.pb-c.h
  COMMAND ${PROTOC_C} --c_out=${DQG_ONNX_GEN_DIR} -I${_proto_dir} ${DQG_ONNX_PROTO}
  DEPENDS ${DQG_ONNX_PROTO}
  COMMENT "protobuf-c: generating C code for onnx.proto")

# Generated code is built without dqgraph's warning flags.
add_library(dqgraph_onnx_proto OBJECT ${DQG_ONNX_GEN_DIR}/onnx.pb-c.c)
target_include_directories(dqgraph_onnx_proto PUBLIC ${DQG_ONNX_GEN_DIR})
target_link_libraries(dqgraph_onnx_proto PUBLIC PkgConfig::PROTOBUF_C)

file(GLOB DQG_ONNX_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/onnx/*.c)
target_sources(dqgraph PRIVATE ${DQG_ONNX_SOURCES} $<TARGET_OBJECTS:dqgraph_onnx_proto>)
target_include_directories(dqgraph PRIVATE ${DQG_ONNX_GEN_DIR})
target_link_libraries(dqgraph PRIVATE PkgConfig::PROTOBUF_C)
add_dependencies(dqgraph dqgraph_onnx_proto)

# The conformance suite: ONNX's backend node tests from libonnx-testdata.
set(DQG_ONNX_TESTDATA /usr/share/libonnx-testdata/data/node CACHE PATH
    "Folder of the ONNX backend node tests (libonnx-testdata)")

