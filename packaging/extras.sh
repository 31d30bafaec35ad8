#!/bin/sh
# extras.sh OUTDIR [BINARY]: the files that ship beside the binary in release archives
# and packages, made by the proxmops of this source tree (shell completions,
# man pages) plus the unit for packages, whose binary is /usr/bin/proxmops.
# Run by GoReleaser's before hooks, and by the installer's test with the
# binary it built.
set -eu
out=${1:?usage: extras.sh OUTDIR [BINARY]}
bin=${2:-}
cd "$(dirname "$0")/.."
rm -rf "$out"
mkdir -p "$out/completions" "$out/manpages"
built=no
if [ -z "$bin" ]; then
	bin="$out/proxmops-host"
	CGO_ENABLED=0 go build -o "$bin" ./cmd/proxmops
	built=yes
fi
for shell in bash zsh fish; do
	"$bin" completion "$shell" >"$out/completions/proxmops.$shell"
done
"$bin" man --dir "$out/manpages"
[ "$built" = no ] || rm -f "$bin"
sed 's|^ExecStart=/usr/local/bin/proxmops|ExecStart=/usr/bin/proxmops|' packaging/proxmops.service >"$out/proxmops.service.pkg"
cp /etc/ssl/certs/ca-certificates.crt "$out/ca-certificates.crt" 2>/dev/null || echo "extras.sh: no /etc/ssl/certs/ca-certificates.crt: the container image needs it (Debian: apt-get install ca-certificates)" >&2
