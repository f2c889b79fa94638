#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# gen-elf-seeds.sh [CC]: (re)build the symbolize harness's seeds in
# tests/fuzz/symbolize/ from elf_seed.c: executables with DWARF 3, 4 and 5
# line tables, zlib-compressed debug sections, a stripped shared library
# (.dynsym only), and one with its debug info in a .gnu_debuglink file
# (the harness's two-file input: FILE, separator, seed.debug).  Kept in
# git, so the corpus does not depend on the compiler of the day.
# $small and $exe are lists of options.
# shellcheck disable=SC2086
set -eu
cc=${1:-gcc}
here=$(cd "$(dirname "$0")" && pwd)
out=$here/symbolize
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
cd "$here"
# No libc, no page alignment, no unwind tables: small files.
small="-ffile-prefix-map=$here=tests/fuzz -O1 -nostdlib -fno-asynchronous-unwind-tables -Wl,--build-id"
exe="$small -static -Wl,-n"
for v in 2 4 5; do
	$cc -g -gdwarf-$v $exe -o "$out/dwarf$v" elf_seed.c
done
$cc -g -gz=zlib $exe -o "$out/zlib" elf_seed.c
$cc -g $small -shared -fPIC -Wl,-z,max-page-size=64 \
	-Wl,-z,noseparate-code -o "$tmp/lib.so" elf_seed.c
strip --strip-all -o "$out/dynsym.so" "$tmp/lib.so"
$cc -g $exe -o "$tmp/full" elf_seed.c
objcopy --only-keep-debug "$tmp/full" "$tmp/seed.debug"
objcopy --strip-debug --strip-unneeded \
	--add-gnu-debuglink="$tmp/seed.debug" "$tmp/full" "$tmp/stripped"
{
	cat "$tmp/stripped"
	printf '\n--rdmacheck-fuzz-debug-file--\n'
	cat "$tmp/seed.debug"
} >"$out/debuglink"
ls -l "$out"
