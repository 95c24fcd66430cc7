# oracle-job.sh - guest job for md-oracle.sh run (sourced by busybox sh, set -e):
# creates every array in $SETS in one boot, writes the pattern into each, and
# stops it, so the images hold exactly what the real kernel wrote.
#
#   SETS    "name:level:layout:chunkKiB:ndisks:metadata ..." (md arrays, in
#           member order; layout/chunk "-" for mdadm's default)
#   DMSETS  "name;ndisks;table|..." (dm tables after the md sets; $T0.. name
#           the set's own members)
#   BADBLOCK "name member sector count": after writing the pattern, record a
#           bad block on that member of that md set (sector relative to the
#           data offset), so its superblock carries a bad-block log entry
i=0 k=0
for s in $SETS; do
    IFS=: read -r name lvl lay chk nd meta sizes extra <<E
$s
E
    devs=; j=0
    while [ $j -lt $nd ]; do eval "devs=\"\$devs \$M$((i + j))\""; j=$((j + 1)); done
    i=$((i + nd))
    opts="--metadata=$meta --level=$lvl --raid-devices=$nd --assume-clean --run --homehost=oracle"
    extra=$(echo "${extra:-}" | tr , ' ')
    case "$extra" in *--bitmap*) ;; *) [ "$lvl" != 0 ] && opts="$opts --bitmap=none";; esac
    [ -n "$extra" ] && opts="$opts $extra"
    [ "$lay" != - ] && opts="$opts --layout=$lay"
    [ "$chk" != - ] && opts="$opts --chunk=$chk"
    echo "SET $name: mdadm --create /dev/md$k $opts$devs"
    mdadm --create /dev/md$k $opts $devs 2>&1 | grep -v started || true
    write_pattern /dev/md$k
    set -- ${BADBLOCK:-}
    if [ "${1:-}" = "$name" ]; then
        eval "bdev=\$M$((i - nd + $2))"
        real=$(readlink -f $bdev)
        off=$(cat /sys/block/md$k/md/dev-${real##*/}/offset)
        echo "$((off + $3)) $4" > /sys/block/md$k/md/dev-${real##*/}/bad_blocks
        echo "BADBLOCK $name member $2 sector $((off + $3)) count $4"
    fi
    mdadm --stop /dev/md$k
    for d in $devs; do mdadm --examine $d | sed "s|^|EXAMINE $name ${d##*/} |"; done
    k=$((k + 1))
done
old_ifs=$IFS
IFS='|'
for s in ${DMSETS:-}; do
    IFS=$old_ifs
    name=${s%%;*}; rest=${s#*;}; nd=${rest%%;*}; table=${rest#*;}
    j=0
    while [ $j -lt $nd ]; do eval "T$j=\$M$((i + j))"; j=$((j + 1)); done
    i=$((i + nd))
    eval "table=\"$table\""
    echo "SET $name: dmsetup create $name --table \"$table\""
    dmsetup --noudevsync create $name --table "$table"
    case "$table" in *" raid "*) dm_wait_sync $name;; esac
    write_pattern /dev/mapper/$name
    case "$table" in *" raid "*) dm_wait_sync $name;; esac
    dmsetup table $name | sed "s/^/TABLE $name /"
    dmsetup --noudevsync remove $name
    IFS='|'
done
IFS=$old_ifs
