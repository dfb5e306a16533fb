#!/bin/sh
# Hostile guest: garbage into every register, doorbell and admin command,
# DMA aimed at MMIO and nowhere, then a function level reset
# (see guest/rhinet_poke.c). Each node uses its own seed.
exec rhinet-poke "$1" $((0x5eed + $1))
