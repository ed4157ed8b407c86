# The ONNX front end: C code for onnx.proto is generated at configure/build
# time by protobuf-c from the schema Debian's libonnx-dev installs; neither
# the schema nor the generated code is part of the source tree.
pkg_check_modules(PROTOBUF_C REQUIRED IMPORTED_TARGET libprotobuf-c)
find_program(PROTOC_C protoc-c REQUIRED)
find_file(DQG_ONNX_PROTO onnx.proto PATHS /usr/include/onnx NO_DEFAULT_PATH REQUIRED)
get_filename_component(_proto_dir ${DQG_ONNX_PROTO} DIRECTORY)

set(DQG_ONNX_GEN_DIR ${PROJECT_BINARY_DIR}/generated)
file(MAKE_DIRECTORY ${DQG_ONNX_GEN_DIR})
add_custom_command(
  OUTPUT ${DQG_ONNX_GEN_DIR}/onnx.pb-c.c ${DQG_ONNX_GEN_DIR}/onnx.pb-c.h
  COMMAND ${PROTOC_C} --c_out=${DQG_ONNX_GEN_DIR} -I${_proto_dir} ${DQG_ONNX_PROTO}
  DEPENDS ${DQG_ONNX_PROTO}
  COMMENT "protobuf-c: generating C code for onnx.proto")

# Generated code is built without dqgraph's warning flags, and hidden: its
# onnx__* tables and functions are no part of dqgraph's API.
add_library(dqgraph_onnx_proto OBJECT ${DQG_ONNX_GEN_DIR}/onnx.pb-c.c)
set_target_properties(dqgraph_onnx_proto PROPERTIES C_VISIBILITY_PRESET hidden)
target_include_directories(dqgraph_onnx_proto PUBLIC ${DQG_ONNX_GEN_DIR})
target_link_libraries(dqgraph_onnx_proto PUBLIC PkgConfig::PROTOBUF_C)

file(GLOB DQG_ONNX_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/onnx/*.c)
target_sources(dqgraph PRIVATE ${DQG_ONNX_SOURCES} $<TARGET_OBJECTS:dqgraph_onnx_proto>)
target_include_directories(dqgraph PRIVATE ${DQG_ONNX_GEN_DIR})
target_link_libraries(dqgraph PRIVATE PkgConfig::PROTOBUF_C)
add_dependencies(dqgraph dqgraph_onnx_proto)

# The conformance suite: ONNX's backend node tests from libonnx-testdata.
set(DQG_ONNX_TESTDATA /usr/share/libonnx-testdata/data/node CACHE PATH
    "Folder of the ONNX backend node tests (libonnx-testdata)")

# Registers every ONNX backend node test of the supported operators as two
# ctest tests, onnx/<case>/fused and onnx/<case>/unfused, run by
# `dqgraph test`. Called after the tool target exists.
function(dqg_register_onnx_conformance)
  if(NOT IS_DIRECTORY ${DQG_ONNX_TESTDATA})
    message(WARNING "ONNX backend tests not found at ${DQG_ONNX_TESTDATA}; "
                    "install libonnx-testdata to run the conformance suite")
    return()
  endif()
  set(_patterns
      test_dequantizelinear* test_quantizelinear* test_dynamicquantizelinear*
      test_matmul_* test_matmulinteger* test_qlinearmatmul*
      test_basic_conv_* test_conv_with_* test_basic_convinteger* test_convinteger*
      test_qlinearconv* test_gemm_* test_add test_add_* test_mul test_mul_* test_relu test_clip*
      test_identity* test_transpose_* test_reshape_* test_constant test_flatten_*
      test_squeeze test_squeeze_* test_unsqueeze_*
      test_sigmoid* test_tanh* test_erf test_gelu_* test_neg* test_abs test_sqrt* test_reciprocal*
      test_exp test_exp_* test_log test_log_* test_hardsigmoid* test_hardswish* test_leakyrelu*
      test_tan test_tan_example test_asin* test_acos* test_atan* test_sinh* test_cosh*
      test_elu* test_sub test_sub_* test_div test_div_* test_pow test_pow_* test_softmax_*
      test_logsoftmax_* test_concat_* test_sum_* test_dropout_* test_batchnorm_* test_lrn*
      test_layer_normalization_* test_reduce_sum_* test_reduce_mean_* test_reduce_max_*
      test_reduce_min_* test_reduce_prod_* test_reduce_sum_square_*
      test_slice* test_split_* test_shape* test_constantofshape_* test_range_* test_gather_0
      test_gather_1 test_gather_2d_indices test_gather_negative_indices test_gather_elements_*
      test_equal test_equal_bcast test_less test_less_* test_greater test_greater_* test_not_*
      test_and?d test_and_bcast* test_or?d test_or_bcast* test_xor?d test_xor_bcast* test_where_*
      test_maxpool_* test_averagepool_* test_globalmaxpool* test_globalaveragepool* test_expand_*
      test_max_* test_min_* test_cos test_cos_example test_sin test_sin_example test_floor*
      test_ceil* test_round test_sign test_softplus* test_constant_pad test_edge_pad
      test_reflect_pad test_resize_* test_upsample_nearest test_celu test_depthtospace_*
      test_spacetodepth* test_tril* test_triu* test_mean_* test_size* test_selu* test_softsign*
      test_thresholdedrelu* test_argmax_* test_argmin_* test_convtranspose* test_prelu*
      test_tile* test_instancenorm* test_reduce_l1_* test_reduce_l2_* test_reduce_log_sum
      test_reduce_log_sum_asc_axes test_reduce_log_sum_default test_reduce_log_sum_desc_axes
      test_reduce_log_sum_negative_axes test_isnan test_isinf* test_top_k* test_gathernd_*
      test_scatternd* test_scatter_elements_* test_scatter_with_axis test_scatter_without_axis
      test_mod_* test_onehot_* test_hardmax_* test_mvn test_shrink* test_lstm_* test_gru_*
      test_rnn_seq_length test_simple_rnn_*
      # Cast between the float types dqgraph has (it has no DOUBLE or STRING;
      # FLOAT_to_BFLOAT16's expected data is truncated, dqgraph rounds to
      # nearest even).
      test_cast_BFLOAT16_to_FLOAT test_cast_FLOAT16_to_FLOAT test_cast_FLOAT_to_FLOAT16)
  # Cases outside what dqgraph imports, each with the reason:
  #  *_expanded             the function body uses ReduceMin/Max, Div, Round, Saturate ops
  #  test_identity_opt      optional type, not a tensor
  #  test_identity_sequence sequence type, not a tensor
  #  test_reshape_allowzero_reordered  produces an empty tensor (a 0 dimension)
  #  *_training_mode, test_dropout_default_mask*  training outputs (running
  #                         statistics, a boolean mask): dqgraph runs inference
  #  test_pow_types_int*, test_pow_types_float  an integer base (Pow takes floats)
  #  test_pow_types_float32_uint64  dqgraph has no UINT64 type
  #  test_reduce_sum_default_axes_*, *_empty_axes_input_noop_*,
  #  test_reduce_sum_negative_axes_keepdims_random  axes given at run time
  #                         (an empty graph input): dqgraph reads axes at build time
  #  test_constantofshape_int_shape_zero, test_slice_start_out_of_bounds,
  #  test_split_zero_size_splits  empty tensors, which dqgraph does not have
  #  test_maxpool_with_argmax_*  MaxPool's Indices output, which dqgraph does not compute
  #  test_resize_tf_crop_and_resize  a mode dqgraph does not implement
  #  test_tril_zero, test_triu_zero  an input with a 0 dimension
  #  test_max_float64, test_max_uint64, test_min_float64, test_min_uint64  dqgraph
  #                         has no DOUBLE or UINT64 type
  set(_excluded test_identity_opt test_identity_sequence
      test_reshape_allowzero_reordered test_maxpool_with_argmax_2d_precomputed_pads
      test_maxpool_with_argmax_2d_precomputed_strides test_batchnorm_epsilon_training_mode
      test_batchnorm_example_training_mode test_dropout_default_mask
      test_dropout_default_mask_ratio test_pow_types_float test_pow_types_int
      test_pow_types_int32_float32 test_pow_types_int32_int32 test_pow_types_int64_float32
      test_pow_types_int64_int64 test_pow_types_float32_uint64
      test_reduce_sum_default_axes_keepdims_example test_reduce_sum_default_axes_keepdims_random
      test_reduce_sum_empty_axes_input_noop_example test_reduce_sum_empty_axes_input_noop_random
      test_reduce_sum_negative_axes_keepdims_random test_constantofshape_int_shape_zero
      test_slice_start_out_of_bounds test_split_zero_size_splits test_max_float64
      test_max_uint64 test_min_float64 test_min_uint64 test_resize_tf_crop_and_resize
      test_tril_zero test_triu_zero test_mod_mixed_sign_float64 test_mod_uint64)
  set(_cases "")
  foreach(_p ${_patterns})
    file(GLOB _found LIST_DIRECTORIES true ${DQG_ONNX_TESTDATA}/${_p})
    list(APPEND _cases ${_found})
  endforeach()
  list(REMOVE_DUPLICATES _cases)
  list(SORT _cases)
  set(_n 0)
  # The same cases, one name a line, for the Python binding's tests.
  set(_list ${PROJECT_BINARY_DIR}/onnx_conformance_cases.txt)
  file(WRITE ${_list} "")
  foreach(_dir ${_cases})
    get_filename_component(_case ${_dir} NAME)
    if(NOT EXISTS ${_dir}/model.onnx OR _case IN_LIST _excluded OR _case MATCHES "_expanded$")
      continue()
    endif()
    file(APPEND ${_list} "${_case}\n")
    add_test(NAME onnx/${_case}/fused COMMAND dqgraph_tool test ${_dir})
    add_test(NAME onnx/${_case}/unfused COMMAND dqgraph_tool test --no-fuse ${_dir})
    set_tests_properties(onnx/${_case}/fused onnx/${_case}/unfused PROPERTIES
                         PASS_REGULAR_EXPRESSION "1 passed, 0 failed")
    math(EXPR _n "${_n} + 1")
  endforeach()
  # The models PyTorch's exporter wrote (libonnx-testdata's pytorch-converted
  # and pytorch-operator folders), every one but those whose data is DOUBLE.
  set(_pytorch_excluded test_operator_add_broadcast test_operator_add_size1_broadcast
      test_operator_add_size1_right_broadcast test_operator_add_size1_singleton_broadcast
      test_operator_addconstant)
  set(_m 0)
  foreach(_suite pytorch-converted pytorch-operator)
    file(GLOB _found LIST_DIRECTORIES true ${DQG_ONNX_TESTDATA}/../${_suite}/test_*)
    list(SORT _found)
    foreach(_dir ${_found})
      get_filename_component(_case ${_dir} NAME)
      if(NOT EXISTS ${_dir}/model.onnx OR _case IN_LIST _pytorch_excluded)
        continue()
      endif()
      add_test(NAME onnx-${_suite}/${_case}/fused COMMAND dqgraph_tool test ${_dir})
      add_test(NAME onnx-${_suite}/${_case}/unfused COMMAND dqgraph_tool test --no-fuse ${_dir})
      set_tests_properties(onnx-${_suite}/${_case}/fused onnx-${_suite}/${_case}/unfused
                           PROPERTIES PASS_REGULAR_EXPRESSION "1 passed, 0 failed")
      math(EXPR _m "${_m} + 1")
    endforeach()
  endforeach()
  message(STATUS "ONNX conformance: ${_n} backend node tests and ${_m} PyTorch-exported models, "
                 "each fused and unfused")
endfunction()
