#!/bin/sh
# check-one-writer.sh DIR: the provider's send queue has one writer and
# completions one decoder. Only sq.cpp moves a send queue's producer index
# or writes it to the doorbell record, and no made-up IBV_WC_DRIVER3 + n
# opcodes carry direct-verbs completions through ibv_wc.
set -eu
dir=$1
bad=$(grep -nE '(->|\.)sq_producer[[:space:]]*(=[^=]|\+=|\+\+|-=)|sq_record->producer_index' \
	"$dir"/*.cpp "$dir"/*.h | grep -v "^$dir/sq.cpp:" || true)
if [ -n "$bad" ]; then
	echo "check-one-writer: the SQ producer index is written outside sq.cpp:"
	echo "$bad"
	exit 1
fi
if grep -n 'IBV_WC_DRIVER3 *+' "$dir"/*.cpp "$dir"/*.h; then
	echo "check-one-writer: made-up work completion opcodes"
	exit 1
fi
echo "check-one-writer: sq.cpp is the one SQ writer"
