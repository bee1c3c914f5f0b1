# The host runtime's fuzz targets: NAME:SOURCE (in runtime/host/fuzz). Each
# is a libFuzzer binary lruc-host-fuzz-NAME in the LRUC_FUZZ build, and a
# corpus replay, ctest host-fuzz-corpus-NAME over tests/host/corpus/NAME,
# in the normal build.
set(LRUC_HOST_FUZZ_TARGETS
  checkpoint:FuzzCheckpoint.cpp
  tensors:FuzzTensorData.cpp
  model-inputs:FuzzModelInputs.cpp
  stream-carries:FuzzStreamCarries.cpp
  )
set(LRUC_HOST_FUZZ_DIR ${CMAKE_CURRENT_LIST_DIR})
