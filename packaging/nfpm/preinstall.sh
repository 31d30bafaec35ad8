#!/bin/sh
# Package pre-install: the proxmops system user the unit runs as.
set -eu
if ! id proxmops >/dev/null 2>&1; then
	nologin=/usr/sbin/nologin
	[ -x "$nologin" ] || nologin=/sbin/nologin
	[ -x "$nologin" ] || nologin=/bin/false
	useradd --system --user-group --home-dir /var/lib/proxmops --no-create-home --shell "$nologin" proxmops
fi
