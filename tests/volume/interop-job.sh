# interop-job.sh - guest job for md-oracle.sh run: the real md assembles
# every array pony created ($SETS: "name:ndisks ..." in member order),
# runs a "check" pass (MISMATCH_CNT) and checksums the array (MD5).
i=0 k=0
for s in $SETS; do
    name=${s%:*} nd=${s#*:}
    devs=; j=0
    while [ $j -lt $nd ]; do eval "devs=\"\$devs \$M$((i + j))\""; j=$((j + 1)); done
    i=$((i + nd))
    echo "SET $name: mdadm --assemble /dev/md$k$devs"
    mdadm --assemble /dev/md$k --run $devs 2>&1 | grep -v started || true
    if [ ! -e /dev/md$k ]; then
        echo "$name NOT_ASSEMBLED"
        k=$((k + 1))
        continue
    fi
    if [ -e /sys/block/md$k/md/sync_action ]; then
        md_check /dev/md$k | sed "s/^/$name /"
    fi
    echo "$name $(checksum /dev/md$k)"
    mdadm --stop /dev/md$k
    k=$((k + 1))
done
