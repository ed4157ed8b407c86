#!/usr/bin/env bash
# Builds and runs tests/consumer/ against dqgraph one way:
#   run.sh install          SOURCE BUILD WORK   cmake --install BUILD into WORK/prefix
#   run.sh find_package     SOURCE BUILD WORK   find_package(dqgraph), shared library
#   run.sh find_package_static ...              find_package(dqgraph), DQGRAPH_USE_STATIC_LIBS=ON
#   run.sh pkg_config       SOURCE BUILD WORK   cc $(pkg-config --cflags --libs dqgraph)
#   run.sh pkg_config_static ...                cc ... -l:libdqgraph.a $(pkg-config --static ...)
#   run.sh add_subdirectory SOURCE BUILD WORK   add_subdirectory(SOURCE)
# The package modes need the install mode's prefix. CC picks the C compiler.
set -euo pipefail
mode=$1 src=$2 build=$3 work=$4
prefix=$work/prefix
consumer=$src/tests/consumer
cc=${CC:-cc}

needs() { # MODE-DIR: the consumer's NEEDED entries must (not) name libdqgraph
  local exe=$1 want=$2
  if readelf -d "$exe" | grep -q 'NEEDED.*libdqgraph\.so'; then
    [ "$want" = shared ] || { echo "FAIL: $exe links libdqgraph.so" >&2; exit 1; }
    readelf -d "$exe" | grep 'NEEDED.*libdqgraph'
  else
    [ "$want" = static ] || { echo "FAIL: $exe does not link libdqgraph.so" >&2; exit 1; }
  fi
}

cmake_consumer() { # DIR extra-cmake-args...
  local dir=$1
  shift
  rm -rf "$dir"
  cmake -S "$consumer" -B "$dir" -DCMAKE_BUILD_TYPE=Release "$@" >"$dir.log" 2>&1 ||
    { cat "$dir.log"; exit 1; }
  cmake --build "$dir" -j2 >>"$dir.log" 2>&1 || { cat "$dir.log"; exit 1; }
}

pc_dir() { dirname "$(find "$prefix" -name dqgraph.pc | head -n 1)"; }

case $mode in
  install)
    rm -rf "$prefix"
    cmake --install "$build" --prefix "$prefix" >/dev/null
    find "$prefix" -type f -o -type l | sed "s|^$prefix/||" | sort
    ;;
  find_package)
    cmake_consumer "$work/find_package" -DCMAKE_PREFIX_PATH="$prefix"
    needs "$work/find_package/consumer" shared
    "$work/find_package/consumer"
    ;;
  find_package_static)
    cmake_consumer "$work/find_package_static" -DCMAKE_PREFIX_PATH="$prefix" \
      -DDQGRAPH_USE_STATIC_LIBS=ON
    needs "$work/find_package_static/consumer" static
    "$work/find_package_static/consumer"
    ;;
  pkg_config)
    export PKG_CONFIG_PATH; PKG_CONFIG_PATH=$(pc_dir)
    libdir=$(pkg-config --variable=libdir dqgraph)
    # shellcheck disable=SC2046 # pkg-config prints a list of options
    "$cc" -std=c11 -o "$work/consumer_pc" "$consumer/consumer.c" \
      $(pkg-config --cflags --libs dqgraph) -Wl,-rpath,"$libdir"
    needs "$work/consumer_pc" shared
    "$work/consumer_pc"
    ;;
  pkg_config_static)
    export PKG_CONFIG_PATH; PKG_CONFIG_PATH=$(pc_dir)
    # shellcheck disable=SC2046
    "$cc" -std=c11 -o "$work/consumer_pc_static" "$consumer/consumer.c" \
      $(pkg-config --static --cflags --libs dqgraph | sed 's/-ldqgraph\b/-l:libdqgraph.a/')
    needs "$work/consumer_pc_static" static
    "$work/consumer_pc_static"
    ;;
  add_subdirectory)
    cmake_consumer "$work/add_subdirectory" -DDQG_CONSUMER_MODE=add_subdirectory \
      -DDQGRAPH_SOURCE_DIR="$src"
    needs "$work/add_subdirectory/consumer" static
    "$work/add_subdirectory/consumer"
    ;;
  *)
    echo "run.sh: unknown mode '$mode'" >&2
    exit 2
    ;;
esac
