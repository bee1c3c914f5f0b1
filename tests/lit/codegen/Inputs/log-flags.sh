#!/bin/sh
# A host compiler for lruc (LRUC_CXX) that appends each command line to
# $LRUC_FLAGS_LOG and runs the real compiler, $LRUC_REAL_CXX.
echo "$*" >> "$LRUC_FLAGS_LOG"
exec $LRUC_REAL_CXX "$@"
