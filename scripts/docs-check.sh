#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# docs-check: build the kernel documentation the series touches with the
# tree's own Sphinx setup (make htmldocs SPHINXDIRS=...) and fail on any
# warning about a file the series changes. Warnings about other files of
# those directories (labels defined outside them, say) are left alone.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

command -v sphinx-build >/dev/null ||
	die "sphinx-build missing: apt-get install python3-sphinx python3-yaml"
mapfile -t files < <(git -C "$SRC" diff --name-only "$BASE_TAG" -- Documentation | grep '\.rst$')
[ ${#files[@]} -gt 0 ] || { info "the series changes no .rst file"; exit 0; }
dirs=$(printf '%s\n' "${files[@]}" | sed 's|^Documentation/||; s|/[^/]*$||' | sort -u | tr '\n' ' ')
log=$LOGS/htmldocs.log
run_logged "make htmldocs SPHINXDIRS=\"$dirs\"" "$log" \
	make -C "$SRC" O="$BUILD/obj/htmldocs" SPHINXDIRS="$dirs" htmldocs
bad=0
for f in "${files[@]}"; do
	if grep -E "$f:[0-9]*: (WARNING|ERROR)|$f: (WARNING|ERROR)" "$log"; then
		bad=1
	else
		info "htmldocs: $f: no warning"
	fi
done
[ "$bad" -eq 0 ] || die "htmldocs warns about files the series changes"
