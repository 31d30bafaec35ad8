#!/bin/sh
# Package post-install: state directory and configuration readable by the
# service user; reload systemd; restart the service if it ran (an upgrade).
# A fresh install is not started: set /etc/proxmops/proxmops.yaml first, then
# systemctl enable --now proxmops.
set -eu
install -d -m 0700 -o proxmops -g proxmops /var/lib/proxmops
chgrp proxmops /etc/proxmops /etc/proxmops/proxmops.yaml
chmod 0750 /etc/proxmops
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
	systemctl daemon-reload
	if systemctl is-active --quiet proxmops; then
		systemctl restart proxmops
	fi
fi
