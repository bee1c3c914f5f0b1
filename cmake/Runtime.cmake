# lruc's runtime file, and the install.
#
# `lruc -o model.so` compiles a model's C++ against the runtime's headers and
# links the runtime's static archives (built with -fPIC) and OpenBLAS. It
# finds them through one file, <lruc's folder>/../lib/lruc/runtime.txt: in
# the build tree build/lib/lruc/runtime.txt names the source and build
# folders; an install (`cmake --install build --prefix PREFIX`) puts a copy
# of each beside PREFIX/bin/lruc, and a runtime.txt that names them relative
# to itself, so that the prefix may be moved. One entry a line (a path may
# hold spaces): `include DIR`, the native `kernels ARCHIVE` or the
# `portable-kernels ARCHIVE` (`lruc --portable`), then each `library` both
# link, in link order. Included by the top-level CMakeLists.txt, after every
# target it names.

set(header_dirs runtime/include runtime/core/include runtime/cpu/include
  runtime/cuda/include)
set(title "# lruc's runtime: what the model libraries lruc builds compile against and link (cmake/Runtime.cmake)\n")
set(build_runtime "${title}")
foreach(dir ${header_dirs})
  string(APPEND build_runtime "include ${PROJECT_SOURCE_DIR}/${dir}\n")
endforeach()
set(install_runtime "${title}include ../../include\n")
foreach(entry "kernels:LRUCCpuKernels" "portable-kernels:LRUCCpuKernelsPortable"
    "library:LRUCGpuSchedule" "library:LRUCore")
  string(REPLACE ":" ";" entry "${entry}")
  list(GET entry 0 key)
  list(GET entry 1 target)
  string(APPEND build_runtime "${key} $<TARGET_FILE:${target}>\n")
  string(APPEND install_runtime "${key} $<TARGET_FILE_NAME:${target}>\n")
endforeach()
foreach(library ${LRUC_OPENBLAS_LIBRARY})
  string(APPEND build_runtime "library ${library}\n")
  string(APPEND install_runtime "library ${library}\n")
endforeach()
file(GENERATE OUTPUT ${PROJECT_BINARY_DIR}/lib/lruc/runtime.txt
  CONTENT "${build_runtime}")
file(GENERATE OUTPUT ${PROJECT_BINARY_DIR}/lib/lruc/install-runtime.txt
  CONTENT "${install_runtime}")

# The install: the tools in bin/; the runtime's archives and runtime.txt in
# lib/lruc/, its headers (the C ABI and what generated code includes) in
# include/; the C device interface for other languages in lib/; the models,
# examples and documentation in share/. All of it is the component
# `toolchain`, which the test suite installs by name
# (tests/lit/trainer/install.test), so that its install writes
# install_manifest_toolchain.txt and leaves the install_manifest.txt of a
# user's `cmake --install build` alone.
install(TARGETS lruc lruc-opt lruc-gpu-plan lru-train lru-eval lru-predict
  lru-plot lru-data RUNTIME DESTINATION bin COMPONENT toolchain)
install(TARGETS LRUCCpuKernels LRUCCpuKernelsPortable LRUCGpuSchedule LRUCore
  ARCHIVE DESTINATION lib/lruc COMPONENT toolchain)
install(FILES ${PROJECT_BINARY_DIR}/lib/lruc/install-runtime.txt
  DESTINATION lib/lruc RENAME runtime.txt COMPONENT toolchain)
install(TARGETS lruc-device LIBRARY DESTINATION lib COMPONENT toolchain)
foreach(dir ${header_dirs})
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/ DESTINATION include
    COMPONENT toolchain)
endforeach()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/models ${PROJECT_SOURCE_DIR}/examples
  DESTINATION share/lruc COMPONENT toolchain FILES_MATCHING PATTERN "*.lru")
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION share/doc/lruc
  COMPONENT toolchain)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION share/doc/lruc
  COMPONENT toolchain FILES_MATCHING PATTERN "*.md" PATTERN "*.svg")
