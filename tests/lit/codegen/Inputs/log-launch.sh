#!/bin/sh
# A compiler launcher for lruc (LRUC_CXX_LAUNCHER) that appends the command
# it is given to $LRUC_LAUNCH_LOG, then the directory it runs in to
# $LRUC_LAUNCH_DIRS, and runs the command.
echo "$*" >> "$LRUC_LAUNCH_LOG"
pwd >> "$LRUC_LAUNCH_DIRS"
exec "$@"
