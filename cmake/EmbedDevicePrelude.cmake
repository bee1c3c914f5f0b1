# Writes OUTPUT: the CUDA device prelude (PRELUDE) as a C++ raw string
# literal, with the runtime/core headers it includes (CORE_INCLUDE_DIR)
# pasted in, so that generated CUDA sources are self-contained for NVRTC.
file(READ "${PRELUDE}" text)
string(REGEX MATCHALL "#include \"lruc/core/[A-Za-z]+\\.h\"" includes "${text}")
foreach(line IN LISTS includes)
  string(REGEX REPLACE "#include \"(lruc/core/[A-Za-z]+\\.h)\"" "\\1" header "${line}")
  file(READ "${CORE_INCLUDE_DIR}/${header}" content)
  string(REPLACE "${line}" "${content}" text "${text}")
endforeach()
file(WRITE "${OUTPUT}.tmp" "R\"lruc_prelude(${text})lruc_prelude\"\n")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
