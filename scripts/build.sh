#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# build: configure and build one kernel.
#   build.sh baseline|patched [debug|gcov]
# baseline is the pristine tree (tag rothp-base), patched the series branch.
# Each flavour has its own O= directory, so rebuilds are incremental. gcov is
# the coverage kernel: the objects the series touches carry gcov counters.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

kernel=${1:?usage: build.sh baseline|patched [debug|gcov]}
flavour=${2:-}
case "$kernel" in
baseline) src=$BASE_SRC ;;
patched) src=$SRC ;;
bisect) src=$BUILD/src/bisect ;; # series-check: one commit of the series at a time
*) die "unknown kernel '$kernel' (baseline or patched)" ;;
esac
case "$flavour" in
"" | debug | gcov) ;;
*) die "unknown flavour '$flavour' (debug, gcov or nothing)" ;;
esac
case "$PREEMPT" in
full | voluntary | none) ;;
*) die "PREEMPT must be full, voluntary or none, not '$PREEMPT'" ;;
esac
name=$(kernel_name "$kernel" "$flavour")
obj=$BUILD/obj/$name
[ -d "$src" ] || die "$src missing: run 'make apply' first"

# series.config holds options the series adds. A tree part-way through it
# (series-check's bisect worktree) takes them once all of them exist there.
tree=series
if [ "$kernel" = baseline ]; then
	tree=baseline
elif [ "$kernel" = bisect ]; then
	for sym in $(grep -o '^CONFIG_[A-Za-z0-9_]*' "$ROTHP_TOP/kernel-config/series.config"); do
		git -C "$src" grep -q "^config ${sym#CONFIG_}$" -- '*Kconfig*' || tree=baseline
	done
fi
mapfile -t frags < <(kernel_fragments "$flavour" "$tree")
for f in ${EXTRA_CONFIG:-}; do
	[ -f "$f" ] || die "EXTRA_CONFIG fragment $f not found"
	frags+=("$(realpath "$f")")
done

# The release string says which kernel a guest runs: 6.12.118-rothp-patched.
# ROTHP_KARCH: ARCH and CROSS_COMPILE of an arm64 kernel, nothing for x86-64.
make_k() {
	make -C "$src" O="$obj" "${ROTHP_KARCH[@]}" LOCALVERSION="-rothp-$kernel" "$@"
}
cc=$(host_cc)
if [ "$ROTHP_ARCH" = arm64 ]; then
	command -v "${ROTHP_CROSS}gcc" >/dev/null ||
		die "${ROTHP_CROSS}gcc missing: sudo make deps ARCH=arm64"
	cc=${cc%gcc}${ROTHP_CROSS}gcc
fi
# gcov: GCOV_PROFILE_<object>=y for every C file the series touches, as a
# Makefile in the tree would say it. Kbuild matches only the object's stem,
# so the value tests the directory being built ($(obj)): memory.o means
# mm/memory.o, not arch/x86/boot/memory.o, which cannot link gcov's runtime.
# Files of one stem in several directories share one variable.
profile=()
if [ "$flavour" = gcov ]; then
	declare -A dirs=()
	while read -r c; do
		stem=$(basename "${c%.c}")
		dirs[$stem]+="${dirs[$stem]:+ }$(dirname "$c")"
	done < <(touched_c_files)
	[ ${#dirs[@]} -gt 0 ] || die "the series touches no C file?"
	for stem in "${!dirs[@]}"; do
		# shellcheck disable=SC2016 # make expands $(obj), per directory
		profile+=("GCOV_PROFILE_$stem.o=\$(if \$(filter ${dirs[$stem]},\$(obj)),y)")
	done
fi

mkdir -p "$obj"
# Make the config afresh, but keep the old .config (and its timestamp) when the
# result is the same, so an unchanged config costs no rebuild.
configure() {
	[ -f "$obj/.config" ] && cp -p "$obj/.config" "$obj/.config.prev"
	make_k tinyconfig
	# merge_config.sh leaves its temporary files in the current directory.
	(cd "$obj" && "$src/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" "${frags[@]}")
	make_k olddefconfig
	if [ -f "$obj/.config.prev" ] && cmp -s "$obj/.config" "$obj/.config.prev"; then
		mv "$obj/.config.prev" "$obj/.config"
	fi
	rm -f "$obj/.config.prev"
}
run_logged "configuring $name" "$LOGS/config-$name.log" configure

# Every option a fragment asks for must be set as asked.
check_fragments "$obj/.config" "${frags[@]}" ||
	die "$name: option(s) from kernel-config/ were not applied (dependencies?)"

run_logged "building $name" "$LOGS/build-$name.log" \
	make_k -j"$(nproc)" CC="$cc" "${profile[@]}" "$ROTHP_KIMAGE"
info "$name: $obj/$ROTHP_KIMAGE_PATH ($(make_k -s kernelrelease 2>/dev/null))"
