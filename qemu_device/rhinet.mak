# Devices of the minimal x86_64 emulator that runs RHiNET-NG test nodes.
CONFIG_Q35=y
CONFIG_I440FX=y
CONFIG_ISA_DEBUG=y
CONFIG_RHINET=y
