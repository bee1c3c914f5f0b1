#!/bin/sh
# A host compiler for lruc (LRUC_CXX) that fails as a machine short of its
# resources makes a real one fail: LRUC_FAILING_CXX=disk reports a full disk
# as GCC does, =killed dies by SIGKILL (as under the kernel's OOM killer).
case "$LRUC_FAILING_CXX" in
disk)
  echo "unit.cpp:1:1: fatal error: error writing to /tmp/cc0.s: No space left on device" >&2
  exit 1 ;;
killed)
  kill -9 $$ ;;
esac
exit 1
