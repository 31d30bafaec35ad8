#!/bin/sh
# Package pre-remove: stop and disable the service when the package goes away
# (deb: "remove"; rpm: no version left), not on upgrades. State in
# /var/lib/proxmops and the configuration in /etc/proxmops stay.
set -eu
case "${1:-}" in
remove | 0) ;;
*) exit 0 ;;
esac
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
	systemctl disable --now proxmops >/dev/null 2>&1 || true
fi
