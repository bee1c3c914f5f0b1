#!/bin/sh
# A host compiler for lruc (LRUC_CXX) that takes a minute: it writes its
# process id to $LRUC_SLOW_CXX_PIDS, then sleeps.
echo $$ >> "$LRUC_SLOW_CXX_PIDS"
exec sleep 60
