#!/bin/sh
# Verbs that real software uses and that went beyond the basic data path,
# through plain verbs between two nodes over rhinet0: node 1 serves, node 0
# connects to 10.77.0.2 (helpers in verbs.lib.sh). Needs the applications
# overlay (run-cluster.sh --apps): libfabric's fi_pingpong, dropbear for
# rhinet-run, userlib.
#   rhinet-gaps    (tests/vm/guest/rhinet_gaps.c) device memory: memcpy to
#                  and from a DM, ibv_reg_dm_mr (zero-based) as the local
#                  lkey of a SEND and a READ and as the peer's rkey of a
#                  WRITE, a READ and both atomics, every byte checked; RC
#                  QPs without a send queue on an SRQ and on a TM SRQ, one
#                  receiving, a send on it failing ENOMEM; the inline
#                  limit rounded up to what the WQE holds and reported;
#                  max_cqe of 4M entries and a CQ of libfabric's size
#   ibv_xsrq_pingpong  rdma-core's XRC ping-pong (XRC domain, XRC SRQs,
#                  XRC_SEND and XRC_RECV QPs), polling and with -e
#   rhinet-xrc     (tests/vm/guest/rhinet_xrc.c) two initiators into one
#                  XRC SRQ through ibv_post_send and ibv_wr_set_xrc_srqn,
#                  every message's wr_id, QPs and bytes checked; a second
#                  process of the domain opening the target QP with
#                  ibv_open_qp and receiving through it, a process of
#                  another domain refused; SENDs naming another domain's
#                  SRQ or a destroyed SRQ's number: REM_INV_REQ_ERR and
#                  xrc_refused counting each; WRITE/READ/atomics, receives
#                  and SRQ-less ibv_wr_* SENDs refused on an XRC_SEND QP
#   rdma_xclient   rdmacm-utils' rdma_xserver/rdma_xclient in RC mode: the
#                  client asks for max_inline_data 0 and posts a 16-byte
#                  IBV_SEND_INLINE SEND
#   rdma_xclient_xrc  the same in XRC mode (-c x): librdmacm makes the
#                  server's XRC domain, XRC SRQ and target QP and the
#                  client's XRC_SEND QP (rdma_create_ep); the SEND lands in
#                  the server's SRQ
#   fi_pingpong    libfabric 1.17, provider verbs;ofi_rxm, RDM endpoints
#                  with libfabric's defaults (FI_UNIVERSE_SIZE 256 sizes
#                  the CQ at 196608 entries), every size, data checked (-c)
#   twin_diff_dsm  userlib under rhinet-run on both nodes: Twin::read of
#                  what a TWIN PULL left in twin memory, Twin::write and
#                  their refusals (userlib/examples/twin_diff_dsm.cc)
# Then no twin memory is held on either node.
#   verbs_gaps.sh NODE NODES
NODE=$1
# shellcheck disable=SC2034 # read by verbs.lib.sh
LIB_NAME=verbs_gaps
# shellcheck source=verbs.lib.sh
. "$(dirname "$0")/verbs.lib.sh" # rides next to this script (run-cluster.sh)

verbs_setup
verbs_device rhinet0
# rhinet-run starts the userlib ranks over ssh.
ip link set lo up
{
	echo "127.0.0.1 localhost"
	echo "10.77.0.1 node0"
	echo "10.77.0.2 node1"
} >/etc/hosts
chmod 700 /root/.ssh 2>/dev/null
dropbear -r /etc/dropbear/dropbear_ed25519_host_key -s -p 22 -E \
	2>/tmp/dropbear.log || fail "dropbear (run-cluster --apps?)"

stat() { rdma statistic show link rhinet0/1 | tr ' ' '\n' | grep -A1 -x "$1" | tail -n 1; }

run_pair rhinet-gaps /opt/rhinet/bin/rhinet-gaps -d rhinet0 -g "$GID"
run_pair ibv_xsrq_pingpong ibv_xsrq_pingpong -d rhinet0 -g "$GID" -m 1024 \
	-n 50
run_pair ibv_xsrq_pingpong_events ibv_xsrq_pingpong -d rhinet0 -g "$GID" \
	-m 1024 -n 20 -e
run_pair rhinet-xrc /opt/rhinet/bin/rhinet-xrc -d rhinet0 -g "$GID"

verbs_retry_script

# rdma_xserver answers one client and exits; the client tries again while
# the server is not listening yet (rdma_connect refused).
cat >/tmp/xclient.sh <<'EOT'
#!/bin/sh
[ $# = 0 ] && exec rdma_xserver -c r -p 7471
exec /tmp/retry.sh /tmp/xclient.out rdma_connect \
	rdma_xclient -s "$1" -p 7471 -c r
EOT
chmod +x /tmp/xclient.sh
run_pair rdma_xclient /tmp/xclient.sh
sed -e 's/-c r/-c x/' /tmp/xclient.sh >/tmp/xclient_xrc.sh
chmod +x /tmp/xclient_xrc.sh
run_pair rdma_xclient_xrc /tmp/xclient_xrc.sh

# libfabric with its defaults: no FI_* variable is set. The client tries
# again while the server's control port is not open yet.
cat >/tmp/fi_pingpong.sh <<'EOT'
#!/bin/sh
P="-p verbs;ofi_rxm -e rdm -d rhinet0 -c"
[ $# = 0 ] && exec fi_pingpong $P
exec /tmp/retry.sh /tmp/fi.out "Connection refused" fi_pingpong $P "$1"
EOT
chmod +x /tmp/fi_pingpong.sh
if [ "$NODE" = 0 ]; then
	fi_info -p "verbs;ofi_rxm" -t FI_EP_RDM -d rhinet0 2>&1 | head -20
fi
run_pair fi_pingpong /tmp/fi_pingpong.sh

# userlib's Twin::read and Twin::write inside twin_diff_dsm, two ranks.
status=ok
if [ "$NODE" = 0 ]; then
	if ! command -v rhinet-run >/dev/null; then
		status=no-rhinet-run
	else
		i=0
		until ssh node1 true 2>/dev/null; do
			i=$((i + 1))
			[ $i -lt 60 ] || break
			sleep 1
		done
		timeout 200 rhinet-run --timeout 180 -n 2 --hosts node0,node1 \
			rhinet_twin_diff_dsm >/tmp/run.log 2>&1 || status="rc=$?"
		cat /tmp/run.log
	fi
fi
sync_status "$status"
echo "== twin_diff_dsm on node $NODE: $status; peer: $PEER_STATUS"
if [ "$status" = ok ] && [ "$PEER_STATUS" = ok ]; then
	echo "verbs_gaps: twin_diff_dsm passed"
else
	failed="$failed twin_diff_dsm"
fi

held=$(stat twin_bytes)
[ "$held" = 0 ] || failed="$failed twin_bytes=$held"
verbs_check_dmesg
[ -z "$failed" ] || fail "failed:$failed"
echo "verbs_gaps: PASS on node $NODE"
