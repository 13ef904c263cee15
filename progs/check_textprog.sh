#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# check_textprog.sh [options] FILE: fail unless the textprog variant FILE is
# linked as its test expects. The build runs it on every variant it links.
# FILE must have exactly one R+X PT_LOAD (not writable) holding the stub
# blob (rothp_blob_start..rothp_blob_end) within its file-backed part.
#
#   -t EXEC|DYN   ELF type (default EXEC)
#   -i yes|no     has a PT_INTERP (default: not checked)
#   -a ALIGN      the R+X PT_LOAD has p_align ALIGN and no PT_LOAD has more
#                 (default: not checked)
#   -c yes|no     R+X p_vaddr is congruent to p_offset modulo 2 MiB (default yes)
#   -b yes|no     at least one whole 2 MiB-aligned block of virtual addresses
#                 lies in p_vaddr..p_vaddr+p_filesz of it (default yes)
#   -B ALIGN      the blob starts ALIGN-aligned (default 0x200000); at 2 MiB
#                 it must also be a whole number of 2 MiB blocks
#   -P SIZE       -c and -b are of SIZE, not 2 MiB (0x2000000: the PMD of
#                 arm64's 16 KiB pages)
#
# A DYN FILE must also have its first PT_LOAD at a 2 MiB-aligned p_vaddr, so
# that only the properties above tell the variants apart.
set -eu
READELF=${READELF:-readelf}
NM=${NM:-nm}
type=EXEC interp='' align='' congruent=yes blocks=yes blob_align=0x200000 pmd=0x200000

while getopts t:i:a:c:b:B:P: opt; do
	case $opt in
	t) type=$OPTARG ;;
	i) interp=$OPTARG ;;
	a) align=$OPTARG ;;
	c) congruent=$OPTARG ;;
	b) blocks=$OPTARG ;;
	B) blob_align=$OPTARG ;;
	P) pmd=$OPTARG ;;
	*) echo "usage: $0 [-t EXEC|DYN] [-i yes|no] [-a ALIGN] [-c yes|no]" \
		"[-b yes|no] [-B ALIGN] [-P SIZE] FILE" >&2
	   exit 2 ;;
	esac
done
shift $((OPTIND - 1))
f=$1
mb2=$((0x200000))
pmd=$((pmd))
pmd_mib=$((pmd >> 20))

fail() {
	echo "check_textprog: $f: $*" >&2
	exit 1
}

# "yes" if the condition $1 (a shell arithmetic expression) holds, else "no".
yesno() {
	if [ $(($1)) -ne 0 ]; then echo yes; else echo no; fi
}

$READELF -hW "$f" | grep -q "Type:[[:space:]]*$type " || fail "not an ET_$type"

phdrs=$($READELF -lW "$f")
has_interp=no
echo "$phdrs" | grep -q '^[[:space:]]*INTERP[[:space:]]' && has_interp=yes
[ -z "$interp" ] || [ "$interp" = "$has_interp" ] ||
	fail "PT_INTERP present: $has_interp, expected $interp"

# Type Offset VirtAddr PhysAddr FileSiz MemSiz Flg Align; R+X flags are "R E".
seg=$(echo "$phdrs" | awk '$1 == "LOAD" && $7 == "R" && $8 == "E" { print $2, $3, $5, $9 }')
[ -n "$seg" ] || fail "no R+X PT_LOAD segment"
[ "$(echo "$seg" | wc -l)" -eq 1 ] || fail "more than one R+X PT_LOAD segment"
set -- $seg
off=$(($1)) vaddr=$(($2)) filesz=$(($3)) seg_align=$(($4))

if [ -n "$align" ]; then
	[ "$seg_align" -eq $((align)) ] ||
		fail "R+X segment p_align $seg_align, expected $((align))"
	max=$(echo "$phdrs" | awk '$1 == "LOAD" { print $NF }' | while read -r a; do
		echo $((a))
	done | sort -n | tail -n 1)
	[ "$max" -le $((align)) ] || fail "a PT_LOAD has p_align $max, above $((align))"
fi

if [ "$type" = DYN ]; then
	first=$(echo "$phdrs" | awk '$1 == "LOAD" { print $3; exit }')
	[ $((first % mb2)) -eq 0 ] || fail "first PT_LOAD p_vaddr $first not 2 MiB-aligned"
fi

is_congruent=$(yesno "(vaddr - off) % pmd == 0")
[ "$is_congruent" = "$congruent" ] ||
	fail "R+X segment offset $1 vaddr $2: $pmd_mib MiB-congruent $is_congruent, expected $congruent"

first_block=$(((vaddr + pmd - 1) / pmd * pmd))
nr_blocks=0
[ $((first_block + pmd)) -gt $((vaddr + filesz)) ] ||
	nr_blocks=$(((vaddr + filesz - first_block) / pmd))
has_blocks=$(yesno "nr_blocks > 0")
[ "$has_blocks" = "$blocks" ] ||
	fail "R+X segment vaddr $2 filesz $3 holds $nr_blocks whole $pmd_mib MiB blocks," \
		"expected blocks: $blocks"

start=$($NM "$f" | awk '$3 == "rothp_blob_start" { print "0x" $1 }')
end=$($NM "$f" | awk '$3 == "rothp_blob_end" { print "0x" $1 }')
[ -n "$start" ] && [ -n "$end" ] || fail "no rothp_blob_start/rothp_blob_end symbols"
start=$((start)) end=$((end))
[ $((start % blob_align)) -eq 0 ] || fail "blob start $start not $((blob_align))-aligned"
[ "$end" -gt "$start" ] || fail "empty blob"
[ $((blob_align)) -ne "$mb2" ] || [ $(((end - start) % mb2)) -eq 0 ] ||
	fail "blob size $((end - start)) not a whole number of 2 MiB blocks"
[ "$start" -ge "$vaddr" ] && [ "$end" -le $((vaddr + filesz)) ] ||
	fail "blob not inside the file-backed R+X segment"

printf 'check_textprog: %s: ET_%s, interp %s, R+X offset %#x vaddr %#x filesz %#x align %#x,' \
	"$f" "$type" "$has_interp" "$off" "$vaddr" "$filesz" "$seg_align"
printf ' congruent %s, %d whole %d MiB blocks, blob %#x-%#x\n' \
	"$is_congruent" "$nr_blocks" "$pmd_mib" "$start" "$end"
