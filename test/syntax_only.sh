#!/bin/sh
# Compiler launcher (CXX_COMPILER_LAUNCHER) for compile-only checks: runs the compile
# command with -fsyntax-only (parses and instantiates, generates no code) and leaves
# an empty file where the command's -o names its object, so the build tool sees its
# output and rebuilds it only when a source or header changes (-MD still writes the
# dependency file).
out="" prev=""
for arg in "$@"; do
  [ "$prev" = "-o" ] && out=$arg
  prev=$arg
done
"$@" -fsyntax-only || exit $?
if [ -n "$out" ]; then : > "$out"; fi
