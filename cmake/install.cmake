# Installation: the libraries, the headers, the tool (CMakeLists.txt), and
# what lets other projects use them: a CMake package (find_package(dqgraph),
# targets dqgraph::dqgraph, dqgraph::dqgraph_shared, dqgraph::dqgraph_static)
# and a pkg-config file (dqgraph.pc). Both are relocatable: they find the
# installed files relative to themselves, so `cmake --install --prefix DIR`
# works for any DIR.
include(CMakePackageConfigHelpers)
set(DQG_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/dqgraph CACHE STRING
    "Where dqgraphConfig.cmake is installed, relative to the prefix")

# Two export sets, so that a user of the shared library never needs the
# static library's dependencies (oneDNN's CMake package, xxHash, protobuf-c).
install(TARGETS dqgraph EXPORT dqgraphStaticTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        PUBLIC_HEADER DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT dqgraphStaticTargets NAMESPACE dqgraph:: DESTINATION ${DQG_INSTALL_CMAKEDIR})
if(TARGET dqgraph_shared)
  install(TARGETS dqgraph_shared EXPORT dqgraphSharedTargets
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(EXPORT dqgraphSharedTargets NAMESPACE dqgraph:: DESTINATION ${DQG_INSTALL_CMAKEDIR})
endif()

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/dqgraphConfig.cmake.in
  ${PROJECT_BINARY_DIR}/dqgraphConfig.cmake INSTALL_DESTINATION ${DQG_INSTALL_CMAKEDIR})
# Before 1.0 a new minor version may change the API: only 0.N.* satisfies a
# request for 0.N.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(_dqg_compat SameMinorVersion)
else()
  set(_dqg_compat SameMajorVersion)
endif()
write_basic_package_version_file(${PROJECT_BINARY_DIR}/dqgraphConfigVersion.cmake
  COMPATIBILITY ${_dqg_compat})
install(FILES ${PROJECT_BINARY_DIR}/dqgraphConfig.cmake
              ${PROJECT_BINARY_DIR}/dqgraphConfigVersion.cmake
        DESTINATION ${DQG_INSTALL_CMAKEDIR})

# dqgraph.pc: `pkg-config --libs dqgraph` links the shared library;
# `--static` adds what the static archive needs. The prefix is found from the
# .pc file's own folder unless the install folders are absolute.
set(_dqg_pc_dir ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(DQG_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH _dqg_up /${_dqg_pc_dir} /)
  string(REGEX REPLACE "/$" "" _dqg_up "${_dqg_up}")
  set(DQG_PC_PREFIX "\${pcfiledir}/${_dqg_up}")
endif()
foreach(_dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_dir}}")
    set(DQG_PC_${_dir} "${CMAKE_INSTALL_${_dir}}")
  else()
    set(DQG_PC_${_dir} "\${prefix}/${CMAKE_INSTALL_${_dir}}")
  endif()
endforeach()
set(DQG_PC_LIBS_PRIVATE "-ldnnl")
foreach(_lib ${OpenMP_C_LIB_NAMES})
  string(APPEND DQG_PC_LIBS_PRIVATE " -l${_lib}")
endforeach()
if(CMAKE_THREAD_LIBS_INIT AND NOT " ${DQG_PC_LIBS_PRIVATE} " MATCHES " ${CMAKE_THREAD_LIBS_INIT} ")
  string(APPEND DQG_PC_LIBS_PRIVATE " ${CMAKE_THREAD_LIBS_INIT}")
endif()
string(APPEND DQG_PC_LIBS_PRIVATE " -l${MATH_LIBRARY}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/dqgraph.pc.in ${PROJECT_BINARY_DIR}/dqgraph.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/dqgraph.pc DESTINATION ${_dqg_pc_dir})
