# Devices of the minimal x86_64 emulator that runs RHiNET-NG test nodes.
CONFIG_Q35=y
CONFIG_I440FX=y
CONFIG_ISA_DEBUG=y
CONFIG_RHINET=y
# A stock virtio-net NIC beside ours (run-cluster --virtio-link): soft-RoCE's
# reference as a user without our NIC would run it.
CONFIG_VIRTIO_PCI=y
CONFIG_VIRTIO_NET=y
# Read-only disks that carry the test nodes' files (tests/vm/prepare.sh): a
# guest reads only what it uses instead of unpacking a large initramfs.
CONFIG_VIRTIO_BLK=y
