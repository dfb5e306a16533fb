#!/bin/sh
# A user's job's node set-up (scripts/rhinet-cluster), sourced by
# user_job.sh in batch mode and by /job/.profile before node 0's shell:
# the applications overlay's environment, and the libraries the user's
# programs brought (copied to /job/.lib: those not from the system's
# directories) where the loader looks without a cache, so ranks that ssh
# starts find them too.
LIB_NAME=rhinet-cluster
# ssh then checks the nodes' keys against /root/.ssh/known_hosts (quietly).
export HOME=/root
. /test/apps.lib.sh

user_job_setup() {
	for lib in /job/.lib/*; do
		[ -e "$lib" ] && ln -sf "$lib" /usr/lib/x86_64-linux-gnu/
	done
	apps_setup
}
