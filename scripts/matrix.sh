#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# matrix: build the series the way the kernel test robot does.
#   matrix.sh [CONFIG...]       the configurations named (default: all)
# For each configuration: the patched tree's vmlinux (zImage/Image on other
# architectures) must build; then the objects the series touches are
# rebuilt with W=1 and checked with sparse (C=2), in the patched and in the
# baseline tree, and every warning in a file the series touches that the
# baseline does not have counts as new (matched by file and message, not
# line, so moved code is not new). Any new warning fails the configuration.
#
#   MATRIX_OBJS_ONLY=1   skip the vmlinux build (CI's cheap part): only the
#                        touched objects the configuration enables
#   BUILD_EACH=1         also build the touched objects, with W=1, at every
#                        patch of the series in order, in every configuration
#
# Results: results/matrix.md, results/matrix.json; logs in build/logs/matrix/.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

configs=${*:-$MATRIX_ALL}
mdir=$BUILD/matrix
mlog=$LOGS/matrix
mkdir -p "$mdir" "$mlog" "$RESULTS"
case "${MATRIX_OBJS_ONLY:-0}" in 1 | y | yes) objs_only=1 ;; *) objs_only=0 ;; esac
case "${BUILD_EACH:-0}" in 1 | y | yes) build_each=1 ;; *) build_each=0 ;; esac
debian_cfg=/usr/src/linux-config-6.12/config.amd64_none_amd64.xz
# sparse stops after 100 warnings by default: a noisy file (mm/memory.c)
# would hide a new warning behind old ones in both trees alike.
SPARSE_FLAGS="-fmax-warnings=100000"

# The files the series touches; the C files among them are the objects.
mapfile -t touched < <(git -C "$SRC" diff --name-only "$BASE_TAG..$SERIES_BRANCH" -- '*.c' '*.h')
mapfile -t csrc < <(touched_c_files)
[ ${#csrc[@]} -gt 0 ] || die "the series touches no C file?"
printf '%s\n' "${touched[@]}" >"$mdir/touched"

# The option that puts each touched object in the build; every touched C
# file must be listed, so that a new one is not silently left out.
declare -A needs=(
	[fs/binfmt_elf.c]=BINFMT_ELF [fs/ext4/super.c]=EXT4_FS [fs/open.c]=''
	[mm/filemap.c]='' [mm/khugepaged.c]=TRANSPARENT_HUGEPAGE
	[mm/madvise.c]=ADVISE_SYSCALLS [mm/memory.c]=MMU [mm/mmap.c]=MMU
	[mm/page-writeback.c]='' [mm/vmstat.c]=''
)
# Objects that #include a touched C file, and the option that builds them:
# their warnings name the touched file.
declare -A includers=([fs/compat_binfmt_elf.c]=COMPAT_BINFMT_ELF)
for c in "${csrc[@]}"; do
	[ -n "${needs[$c]+set}" ] || die "scripts/matrix.sh: no entry for $c in 'needs'"
done

# make_vars CONFIG: the architecture and tool chain of the configuration.
make_vars() {
	case "$1" in
	arm64) echo "ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-" ;;
	i386) echo "ARCH=i386" ;;
	clang) echo "LLVM=1" ;;
	*) echo "ARCH=x86_64" ;;
	esac
}
# The fragment of the configuration itself, after the check fragments.
own_fragment() {
	case "$1" in
	thp-off) echo '# CONFIG_TRANSPARENT_HUGEPAGE is not set' ;;
	rothp-off) echo '# CONFIG_READ_ONLY_THP_FOR_FS is not set' ;;
	shmem-off) echo '# CONFIG_SHMEM is not set' ;;
	tracing-off) printf '%s\n' '# CONFIG_FTRACE is not set' '# CONFIG_UPROBE_EVENTS is not set' ;;
	memcg-off) echo '# CONFIG_MEMCG is not set' ;;
	smp-off) echo '# CONFIG_SMP is not set' ;;
	i386) echo '# CONFIG_64BIT is not set' ;;
	debian-amd64) printf '%s\n' 'CONFIG_TRANSPARENT_HUGEPAGE=y' 'CONFIG_READ_ONLY_THP_FOR_FS=y' ;;
	esac
}

# The option each configuration is about, and what .config must say of it:
# the first line of its own fragment where it turns an option off.
must_have() {
	case "$1" in
	clang) echo 'CONFIG_CC_IS_CLANG=y' ;;
	x86_64 | arm64 | debian-amd64) echo 'CONFIG_READ_ONLY_THP_FOR_FS=y' ;;
	*) own_fragment "$1" | head -n 1 ;;
	esac
}

# configure CONFIG TREE OBJ [each]: the configuration's .config in OBJ.
# With "each", TREE is the series up to one of its patches, which may not
# know the options later patches add: those are not required.
configure() {
	local cfg=$1 tree=$2 obj=$3 each=${4:-} vars own
	vars=$(make_vars "$cfg")
	own=$mdir/$cfg.fragment
	own_fragment "$cfg" >"$own"
	mkdir -p "$obj"
	# A .config of an earlier run must not stand in for a failed step.
	rm -f "$obj/.config"
	if [ "$cfg" = debian-amd64 ]; then
		[ -f "$debian_cfg" ] || { echo "$debian_cfg missing: apt-get install linux-config-6.12"; return 1; }
		xz -dc "$debian_cfg" >"$obj/.config" || return 1
		# Debian signs modules with its own key and trusts its own certs;
		# its BTF needs pahole, its debug info only makes the build slower.
		# None of these changes what the touched files compile to.
		printf '%s\n' 'CONFIG_MODULE_SIG_KEY=""' 'CONFIG_SYSTEM_TRUSTED_KEYS=""' \
			'CONFIG_SYSTEM_REVOCATION_KEYS=""' '# CONFIG_MODULE_SIG_ALL is not set' \
			'CONFIG_DEBUG_INFO_NONE=y' '# CONFIG_DEBUG_INFO_DWARF5 is not set' \
			'# CONFIG_DEBUG_INFO_BTF is not set' >>"$own"
		(cd "$obj" && "$tree/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" "$own") ||
			return 1
	else
		# shellcheck disable=SC2086
		make -C "$tree" O="$obj" $vars tinyconfig || return 1
		local frags
		mapfile -t frags < <(kernel_fragments "$([ "$cfg" = x86_64 ] && echo debug)" \
			"$([ "$tree" = "$BASE_SRC" ] && echo baseline || echo series)" \
			"$([ "$cfg" = arm64 ] && echo arm64 || echo x86_64)")
		(cd "$obj" && "$tree/scripts/kconfig/merge_config.sh" -m -O "$obj" \
			"$obj/.config" "${frags[@]}" "$own") || return 1
	fi
	# shellcheck disable=SC2086
	make -C "$tree" O="$obj" $vars olddefconfig || return 1
	# The configurations that turn nothing off get every option the
	# check kernel has, as build.sh checks it; the others drop what
	# depends on the option they turn off, and are checked for that one.
	case "$cfg$each" in
	x86_64 | clang)
		check_fragments "$obj/.config" "${frags[@]}" ||
			{ echo "matrix: $cfg: options of kernel-config/ were not applied"; return 1; }
		;;
	esac
	# An option turned off may also be absent: Kconfig does not write a
	# symbol without a prompt (64BIT under ARCH=i386).
	local want sym
	want=$(must_have "$cfg")
	sym=$(echo "$want" | grep -oE 'CONFIG_[A-Za-z0-9_]+')
	grep -qxF "$want" "$obj/.config" ||
		{ [[ $want == "# "* ]] && ! grep -qE "^$sym=" "$obj/.config"; } ||
		{ echo "matrix: $cfg: .config lacks '$want'"; return 1; }
}

# enabled_objs OBJ: the touched objects that OBJ's .config builds.
enabled_objs() {
	local c opt
	for c in "${csrc[@]}" "${!includers[@]}"; do
		opt=${needs[$c]:-${includers[$c]:-}}
		# =m too: Debian builds ext4 as a module.
		if [ -z "$opt" ] || grep -qE "^CONFIG_$opt=[ym]" "$1/.config"; then
			echo "${c%.c}.o"
		fi
	done
}

# objs_pass CONFIG TREE OBJ TAG: W=1 then sparse on the touched objects.
objs_pass() {
	local cfg=$1 tree=$2 obj=$3 tag=$4 vars cc objs
	vars=$(make_vars "$cfg")
	cc=$(cc_for "$cfg")
	mapfile -t objs < <(enabled_objs "$obj")
	(cd "$obj" && rm -f "${objs[@]}")
	# shellcheck disable=SC2086
	make -C "$tree" O="$obj" $vars CC="$cc" -j"$(nproc)" W=1 "${objs[@]}" >"$mlog/$cfg.$tag.w1.log" 2>&1 ||
		{ echo "matrix: $cfg $tag: W=1 build of ${objs[*]} failed"; return 1; }
	# shellcheck disable=SC2086
	make -C "$tree" O="$obj" $vars CC="$cc" -j"$(nproc)" C=2 CF="$SPARSE_FLAGS" "${objs[@]}" >"$mlog/$cfg.$tag.sparse.log" 2>&1 ||
		{ echo "matrix: $cfg $tag: sparse of ${objs[*]} failed"; return 1; }
}

full_target() {
	case "$1" in
	arm64) echo Image ;;
	debian-amd64) echo vmlinux ;;
	*) echo bzImage ;;
	esac
}

one_config() {
	local cfg=$1 vars start result=pass pobj bobj
	vars=$(make_vars "$cfg")
	pobj=$mdir/$cfg/patched
	bobj=$mdir/$cfg/baseline
	start=$(date +%s)
	: >"$mlog/$cfg.status"
	# A subshell: a failed step ends this configuration, not the matrix.
	(
		configure "$cfg" "$SRC" "$pobj" >"$mlog/$cfg.patched.config.log" 2>&1 ||
			{ echo "matrix: $cfg: the series does not configure (see $cfg.patched.config.log: $(tail -n 1 "$mlog/$cfg.patched.config.log"))"; exit 1; }
		if [ "$objs_only" != 1 ]; then
			local t0
			t0=$(date +%s)
			# shellcheck disable=SC2086
			make -C "$SRC" O="$pobj" $vars -j"$(nproc)" CC="$(cc_for "$cfg")" "$(full_target "$cfg")" \
				>"$mlog/$cfg.patched.full.log" 2>&1 ||
				{ echo "matrix: $cfg: $(full_target "$cfg") of the series failed"; exit 1; }
			echo "full_seconds=$(($(date +%s) - t0))"
		fi
		objs_pass "$cfg" "$SRC" "$pobj" patched || exit 1
		configure "$cfg" "$BASE_SRC" "$bobj" >"$mlog/$cfg.baseline.config.log" 2>&1 ||
			{ echo "matrix: $cfg: the baseline does not configure (see $cfg.baseline.config.log)"; exit 1; }
		objs_pass "$cfg" "$BASE_SRC" "$bobj" baseline || exit 1
		if [ "$build_each" = 1 ]; then
			each_patch "$cfg" || exit 1
		fi
	) >>"$mlog/$cfg.status" 2>&1 || result=fail
	echo "result=$result" >>"$mlog/$cfg.status"
	echo "seconds=$(($(date +%s) - start))" >>"$mlog/$cfg.status"
	info "matrix: $cfg: $result in $(($(date +%s) - start))s$(grep -m1 '^matrix:' "$mlog/$cfg.status" | sed 's/^matrix:/;/' || true)"
}

cc_for() {
	case "$1" in
	clang) echo clang ;;
	arm64) echo "$(host_cc | sed 's/gcc$/aarch64-linux-gnu-gcc/')" ;;
	*) host_cc ;;
	esac
}

# each_patch CONFIG: every patch of the series, in order, builds the touched
# objects of its configuration with W=1 (in a worktree of its own).
each_patch() {
	local cfg=$1
	local tree=$BUILD/src/matrix-each obj=$mdir/$cfg/each vars c i=0 objs
	vars=$(make_vars "$cfg")
	git -C "$SRC" worktree prune
	[ -d "$tree" ] || git -C "$SRC" worktree add -q --detach "$tree" "$BASE_TAG" ||
		{ echo "matrix: $cfg: cannot make the worktree $tree"; return 1; }
	for c in $(git -C "$SRC" rev-list --reverse "$BASE_TAG..$SERIES_BRANCH"); do
		i=$((i + 1))
		git -C "$tree" checkout -q --detach "$c" ||
			{ echo "matrix: $cfg: cannot check out patch $i"; return 1; }
		configure "$cfg" "$tree" "$obj" each >"$mlog/$cfg.each.config.log" 2>&1 ||
			{ echo "matrix: $cfg: patch $i does not configure"; return 1; }
		mapfile -t objs < <(enabled_objs "$obj")
		# shellcheck disable=SC2086
		make -C "$tree" O="$obj" $vars CC="$(cc_for "$cfg")" -j"$(nproc)" W=1 "${objs[@]}" \
			>"$mlog/$cfg.each.$i.log" 2>&1 ||
			{ echo "matrix: $cfg: patch $i ($(git -C "$SRC" log -1 --format=%s "$c")) does not build"; return 1; }
	done
	[ "$i" -gt 0 ] || { echo "matrix: $cfg: the series has no commits"; return 1; }
	echo "each_patch=$i"
}

[ -d "$BASE_SRC" ] || die "$BASE_SRC missing: run 'make apply' first"
for cfg in $configs; do
	case " $MATRIX_ALL " in *" $cfg "*) ;; *) die "unknown configuration '$cfg' (one of: $MATRIX_ALL)" ;; esac
	command -v sparse >/dev/null || die "sparse missing (make deps)"
	case "$cfg" in
	arm64) command -v aarch64-linux-gnu-gcc >/dev/null || die "aarch64-linux-gnu-gcc missing (make deps)" ;;
	clang) command -v clang >/dev/null && command -v ld.lld >/dev/null || die "clang and lld missing (make deps)" ;;
	esac
	info "matrix: $cfg (log: ${mlog#"$ROTHP_TOP"/}/$cfg.*)"
	one_config "$cfg"
done
"$ROTHP_TOP/scripts/rothp-host" matrix-report "$mdir/touched" "$mlog" "$RESULTS" $configs
