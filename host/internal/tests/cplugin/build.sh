#!/bin/sh
# Build the C plugin c_stat into OUT.wasm: clang for wasm32-wasi, linked by
# wasm-ld as a WASI reactor against wasi-libc.
#
#   host/internal/tests/cplugin/build.sh OUT.wasm
#
# Exit status 3 means the toolchain is missing (nothing was tried), 1 that
# the build failed.
#
# On Debian: apt-get install clang-14 lld-14 wasi-libc libclang-rt-14-dev-wasm32
# Elsewhere set CC to a clang with the wasm32 target and WASI_SYSROOT to a
# wasi-libc sysroot.
set -eu

if [ $# -ne 1 ]; then
	echo "usage: $0 OUT.wasm" >&2
	exit 2
fi
out=$1
src=$(cd "$(dirname "$0")" && pwd)/c_stat.c
install="install them with: apt-get install clang-14 lld-14 wasi-libc libclang-rt-14-dev-wasm32 (or set CC and WASI_SYSROOT)"

cc=${CC:-}
if [ -z "$cc" ]; then
	for c in clang clang-19 clang-18 clang-17 clang-16 clang-15 clang-14; do
		if command -v "$c" >/dev/null 2>&1; then
			cc=$c
			break
		fi
	done
fi
if [ -z "$cc" ]; then
	echo "$0: no clang found to build the C plugin; $install" >&2
	exit 3
fi
if ! "$cc" --version >/dev/null 2>&1; then
	echo "$0: $cc is on PATH but does not run ($cc --version fails); $install" >&2
	exit 3
fi
version=$(basename "$cc")
version=${version#clang}
if ! command -v "wasm-ld$version" >/dev/null 2>&1 && ! command -v wasm-ld >/dev/null 2>&1; then
	echo "$0: $cc has no wasm-ld linker (package lld); $install" >&2
	exit 3
fi

sysroot=
if [ -n "${WASI_SYSROOT:-}" ]; then
	sysroot="--sysroot=$WASI_SYSROOT"
elif [ ! -f /usr/lib/wasm32-wasi/libc.a ]; then
	echo "$0: no wasi-libc (/usr/lib/wasm32-wasi/libc.a; package wasi-libc); $install" >&2
	exit 3
fi

# clang links compiler-rt's builtins for wasm32 into every module (package
# libclang-rt-14-dev-wasm32 on Debian); it names the file it would link.
# shellcheck disable=SC2086
rt=$("$cc" --target=wasm32-wasi $sysroot -print-libgcc-file-name 2>/dev/null || true)
if [ -z "$rt" ] || [ ! -f "$rt" ]; then
	echo "$0: $cc has no compiler-rt builtins for wasm32 (${rt:-none named}; package libclang-rt-14-dev-wasm32); $install" >&2
	exit 3
fi

# -mexec-model=reactor links crt1-reactor.o, whose _initialize runs the C
# constructors; the ABI's exports carry export_name attributes.
# shellcheck disable=SC2086
if ! "$cc" --target=wasm32-wasi $sysroot -mexec-model=reactor -O2 -Wall -Werror -fuse-ld=lld \
	-o "$out" "$src"; then
	echo "$0: building $src failed; if the error is about a missing library or compiler-rt, $install" >&2
	exit 1
fi
