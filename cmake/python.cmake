# The Python binding's tests (python/tests, pytest) and the Python sample, as
# ctest tests against this build's shared library and tool. They need a
# python3 that imports numpy and pytest (Debian's python3-numpy and
# python3-pytest, which scripts/setup.sh installs); DQG_PYTHON picks one.
# Sanitized builds are left out: their library needs the sanitizer runtime
# loaded first, which a plain python3 does not do.
set(DQG_PYTHON "" CACHE FILEPATH "python3 for the binding's tests (default: the first with numpy and pytest)")

function(dqg_register_python_tests)
  if(NOT TARGET dqgraph_shared OR DQG_SANITIZE OR DQG_FUZZ)
    return()
  endif()
  set(_python "${DQG_PYTHON}")
  if(NOT _python)
    # Debian's interpreter first: the packages setup.sh installs are its.
    find_program(_dqg_sys_python python3 PATHS /usr/bin NO_DEFAULT_PATH)
    find_program(_dqg_path_python python3)
    foreach(_candidate ${_dqg_sys_python} ${_dqg_path_python})
      execute_process(COMMAND ${_candidate} -c "import numpy, pytest" RESULT_VARIABLE _rc
                      OUTPUT_QUIET ERROR_QUIET)
      if(_rc EQUAL 0)
        set(_python ${_candidate})
        break()
      endif()
    endforeach()
  endif()
  if(NOT _python)
    message(WARNING "No python3 with numpy and pytest: the Python binding's tests are not "
                    "registered (install python3-numpy and python3-pytest, or set DQG_PYTHON)")
    return()
  endif()
  message(STATUS "Python binding tests: ${_python}")
  set(_env "DQGRAPH_LIBRARY=$<TARGET_FILE:dqgraph_shared>"
           "DQGRAPH_TOOL=$<TARGET_FILE:dqgraph_tool>"
           "DQGRAPH_ONNX_TESTDATA=${DQG_ONNX_TESTDATA}"
           "DQGRAPH_ONNX_CASES=${PROJECT_BINARY_DIR}/onnx_conformance_cases.txt"
           "DQGRAPH_CC=${CMAKE_C_COMPILER}"
           "PYTHONDONTWRITEBYTECODE=1")
  add_test(NAME python/pytest
           COMMAND ${_python} -m pytest -q -p no:cacheprovider ${PROJECT_SOURCE_DIR}/python/tests
           WORKING_DIRECTORY ${PROJECT_BINARY_DIR})
  # About 15 s here (the ONNX cases, the C tool's runs, an offline pip
  # install and 10,000 compile/run cycles); the limit stops a hung install.
  set_tests_properties(python/pytest PROPERTIES ENVIRONMENT "${_env}" TIMEOUT 600)
  if(DQG_BUILD_SAMPLES)
    add_test(NAME sample/python/quickstart
             COMMAND ${_python} ${PROJECT_SOURCE_DIR}/samples/python/quickstart.py
             WORKING_DIRECTORY ${PROJECT_BINARY_DIR})
    set_tests_properties(sample/python/quickstart PROPERTIES ENVIRONMENT "${_env}")
  endif()
endfunction()
