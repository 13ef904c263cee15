#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# check_textprog.sh FILE: fail unless FILE is an ET_EXEC whose R+X PT_LOAD
# has p_vaddr congruent to p_offset modulo 2 MiB, and whose stub blob
# (rothp_blob_start..rothp_blob_end) is a whole number of aligned 2 MiB
# blocks inside that segment. The build runs it on every textprog it links.
set -eu
f=$1
READELF=${READELF:-readelf}
NM=${NM:-nm}

fail() {
	echo "check_textprog: $f: $*" >&2
	exit 1
}

$READELF -hW "$f" | grep -q 'Type:[[:space:]]*EXEC' || fail "not an ET_EXEC"

# Type Offset VirtAddr PhysAddr FileSiz MemSiz Flg Align; R E flags are "R E".
seg=$($READELF -lW "$f" | awk '$1 == "LOAD" && $7 == "R" && $8 == "E" { print $2, $3, $5 }')
[ -n "$seg" ] || fail "no R+X PT_LOAD segment"
[ "$(echo "$seg" | wc -l)" -eq 1 ] || fail "more than one R+X PT_LOAD segment"
set -- $seg
off=$(($1)) vaddr=$(($2)) filesz=$(($3))
mb2=$((0x200000))

[ $((vaddr % mb2)) -eq $((off % mb2)) ] ||
	fail "R+X segment vaddr $2 not congruent to offset $1 modulo 2 MiB"

start=$($NM "$f" | awk '$3 == "rothp_blob_start" { print "0x" $1 }')
end=$($NM "$f" | awk '$3 == "rothp_blob_end" { print "0x" $1 }')
[ -n "$start" ] && [ -n "$end" ] || fail "no rothp_blob_start/rothp_blob_end symbols"
start=$((start)) end=$((end))
[ $((start % mb2)) -eq 0 ] || fail "blob start $start not 2 MiB-aligned"
[ $((end > start)) -eq 1 ] && [ $(((end - start) % mb2)) -eq 0 ] ||
	fail "blob size $((end - start)) not a whole number of 2 MiB blocks"
[ "$start" -ge "$vaddr" ] && [ "$end" -le $((vaddr + filesz)) ] ||
	fail "blob not inside the file-backed R+X segment"

printf 'check_textprog: %s: R+X segment offset %#x vaddr %#x, blob %#x-%#x (%d x 2 MiB)\n' \
	"$f" "$off" "$vaddr" "$start" "$end" $(((end - start) / mb2))
