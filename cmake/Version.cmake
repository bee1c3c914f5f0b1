# Writes OUTPUT, the header of lruc's version (lruc/Version.h): the commit
# of SOURCE_DIR it is built from (`git describe --always --dirty`) and that
# commit's date, or "unknown" outside a git checkout. Run at every build
# (cmake -P, by the lruc-version target), and rewrites the header only when
# they change, so that only what prints them is compiled again. Without
# optional locks: a build never holds the index's lock while one commits.
execute_process(
  COMMAND git -C ${SOURCE_DIR} --no-optional-locks describe --always --dirty
          --abbrev=12
  OUTPUT_VARIABLE LRUC_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE
  RESULT_VARIABLE described ERROR_QUIET)
execute_process(
  COMMAND git -C ${SOURCE_DIR} log -1 --format=%cs
  OUTPUT_VARIABLE LRUC_COMMIT_DATE OUTPUT_STRIP_TRAILING_WHITESPACE
  RESULT_VARIABLE dated ERROR_QUIET)
if(NOT described EQUAL 0 OR LRUC_COMMIT STREQUAL "")
  set(LRUC_COMMIT unknown)
endif()
if(NOT dated EQUAL 0 OR LRUC_COMMIT_DATE STREQUAL "")
  set(LRUC_COMMIT_DATE unknown)
endif()
configure_file(${TEMPLATE} ${OUTPUT} @ONLY)
