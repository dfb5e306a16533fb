#!/bin/sh
# Memory of another device through standard verbs. vgem (a DRM driver
# without hardware) exports dumb buffers as dma-bufs:
#   rhinet-dmabuf       (tests/vm/guest/rhinet_dmabuf.c) on node 0 alone:
#                       ibv_reg_dmabuf_mr, RDMA WRITE and READ into and
#                       out of the dma-buf between two RC QPs connected
#                       through the NIC's loopback, every byte checked
#                       through the process's mmap of it; the refusals (no
#                       dma-buf, a closed descriptor, a range past the
#                       end); descriptor, GEM handle and mapping closed
#                       under a registered MR (it keeps working, dereg
#                       frees the buffer); dereg under a queued WRITE;
#                       two RC QPs and their CQs whose rings and records
#                       lie in a dma-buf (rhinetdv_create_qp/cq): SENDs
#                       and WRITEs past the rings' ends, the CQEs and
#                       WQEs seen in the dma-buf, the refusals, a QP
#                       destroyed with WRITEs queued. The dma-bufs alive
#                       and their attachments are counted in debugfs
#                       before and after.
#   rhinet-dmabuf-user  (tests/vm/guest/rhinet_dmabuf_user.cc) under
#                       rhinet-run, one rank per node: userlib's
#                       Group::dmabuf_buffer as the source of a PUSH and
#                       the target of a PULL, and its refusals.
# Then no node's kernel log has a warning and vgem unloads (no buffer
# left). Node 0 drives the test; node 1 waits for its result.
#   dmabuf.sh NODE NODES   (the applications overlay: run-cluster --apps)
NODE=$1
NODES=$2
LIB_NAME=dmabuf
# shellcheck source=apps.lib.sh
. /test/apps.lib.sh
apps_setup
modprobe vgem || fail "modprobe vgem"
[ "$NODE" = 0 ] || apps_wait 600

wait_link_local

failed=""
timeout 120 /opt/rhinet/bin/rhinet-dmabuf -d rhinet0 -g 0 ||
	failed="$failed rhinet-dmabuf(rc=$?)"

run_ranks rhinet-dmabuf-user

for k in 0 1; do
	if ssh "node$k" dmesg | grep -v "module verification failed" |
		grep -E "BUG:|WARNING:|Oops|rhinet.*not destroyed"; then
		failed="$failed kernel-warnings-node$k"
	fi
	# vgem goes only with every buffer released.
	ssh "node$k" rmmod vgem || failed="$failed vgem-busy-node$k"
done

[ -z "$failed" ] || fail "failed:$failed" # (tells node 1 too)
apps_finish 0
echo "$LIB_NAME: PASS"
