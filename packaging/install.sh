#!/bin/sh
# proxmops installer: downloads the release archive for this machine, checks
# its SHA-256 against the release's checksums.txt, installs the binary, shell
# completions and man pages, and on Linux with systemd the hardened service
# (started unless --no-start). Re-running upgrades in place and restarts.
#
#   curl -fsSL https://github.com/proxmops/proxmops/releases/latest/download/install.sh | sudo sh
#
# Environment:
#   PROXMOPS_VERSION   release to install, e.g. 0.2.0 or v0.2.0 (default: the latest)
#   PROXMOPS_BASE_URL  where the archives and checksums.txt are (a mirror, a
#                      directory served for an air-gapped install); overrides the
#                      project's releases
# Options:
#   --uninstall   remove the binary, completions, man pages and the service;
#                 keep /var/lib/proxmops (database, key) and /etc/proxmops
#   --no-start    install but do not enable or (re)start the service
#   --prefix DIR  install under DIR instead of / (DIR/usr/local/bin, DIR/etc, ...)
#   -h, --help    this text
set -eu

REPO_URL="https://github.com/proxmops/proxmops"
prefix=""
action=install
start=yes

say() { printf 'proxmops-install: %s\n' "$*"; }
die() { printf 'proxmops-install: error: %s\n' "$*" >&2; exit 1; }

usage() {
	if [ -f "$0" ]; then
		sed -n '2,/^set -eu/p' "$0" | sed -e '/^set -eu/d' -e 's/^# \{0,1\}//'
	else
		echo "usage: install.sh [--uninstall] [--no-start] [--prefix DIR]; PROXMOPS_VERSION, PROXMOPS_BASE_URL"
	fi
}

while [ $# -gt 0 ]; do
	case "$1" in
	--uninstall) action=uninstall ;;
	--no-start) start=no ;;
	--prefix)
		[ $# -ge 2 ] || die "--prefix needs a directory"
		prefix=$2
		shift
		;;
	--prefix=*) prefix=${1#--prefix=} ;;
	-h | --help)
		usage
		exit 0
		;;
	*) die "unknown option $1 (see --help)" ;;
	esac
	shift
done
prefix=${prefix%/}

# set_dirs: where each file goes. On macOS /usr (but /usr/local) is read-only
# (System Integrity Protection), so completions go under /usr/local/share,
# where Homebrew's shells look.
set_dirs() {
	bindir="$prefix/usr/local/bin"
	mandir="$prefix/usr/local/share/man/man1"
	zshdir="$prefix/usr/local/share/zsh/site-functions"
	if [ "$os" = darwin ]; then
		bashdir="$prefix/usr/local/share/bash-completion/completions"
		fishdir="$prefix/usr/local/share/fish/vendor_completions.d"
	else
		bashdir="$prefix/usr/share/bash-completion/completions"
		fishdir="$prefix/usr/share/fish/vendor_completions.d"
	fi
	unitdir="$prefix/etc/systemd/system"
	confdir="$prefix/etc/proxmops"
	statedir="$prefix/var/lib/proxmops"
}

# system is "yes" when installing into the running system (no --prefix):
# only then are users created and systemctl run.
system=no
[ -z "$prefix" ] && system=yes

detect_platform() {
	case "$(uname -s)" in
	Linux) os=linux ;;
	Darwin) os=darwin ;;
	*) die "unsupported operating system $(uname -s) (releases exist for Linux and macOS)" ;;
	esac
	case "$(uname -m)" in
	x86_64 | amd64) arch=amd64 ;;
	aarch64 | arm64) arch=arm64 ;;
	*) die "unsupported architecture $(uname -m) (releases exist for amd64 and arm64)" ;;
	esac
}

# have_systemd: the unit applies (Linux); systemd_running: systemctl can act now.
have_systemd() { [ "$os" = linux ]; }
systemd_running() { [ "$system" = yes ] && [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; }

download() { # URL FILE
	if command -v curl >/dev/null 2>&1; then
		curl -fsSL --retry 3 -o "$2" "$1" || die "download failed: $1"
	elif command -v wget >/dev/null 2>&1; then
		wget -q -O "$2" "$1" || die "download failed: $1"
	else
		die "neither curl nor wget is installed"
	fi
}

sha256() { # FILE -> hex digest on stdout
	if command -v sha256sum >/dev/null 2>&1; then
		sha256sum "$1" | cut -d ' ' -f 1
	elif command -v shasum >/dev/null 2>&1; then
		shasum -a 256 "$1" | cut -d ' ' -f 1
	else
		die "neither sha256sum nor shasum is installed: cannot verify the download"
	fi
}

base_url() {
	if [ -n "${PROXMOPS_BASE_URL:-}" ]; then
		printf '%s\n' "${PROXMOPS_BASE_URL%/}"
	elif [ -n "${PROXMOPS_VERSION:-}" ]; then
		printf '%s/releases/download/v%s\n' "$REPO_URL" "${PROXMOPS_VERSION#v}"
	else
		printf '%s/releases/latest/download\n' "$REPO_URL"
	fi
}

need_root() {
	if [ "$system" = yes ] && [ "$(id -u)" != 0 ]; then
		die "installing into the system needs root: run it with sudo (or use --prefix DIR)"
	fi
}

# put SRC DEST MODE: copy next to DEST, then rename, so a running binary or a
# reader never sees a half-written file.
put() {
	mkdir -p "$(dirname "$2")"
	cp "$1" "$2.new.$$"
	chmod "$3" "$2.new.$$"
	mv -f "$2.new.$$" "$2"
}

# put_extra SRC DEST: a completion or man page; where its directory cannot be
# made or written, it is skipped with a note instead of ending the install
# (set -e does not apply inside the condition).
put_extra() {
	if ! (mkdir -p "$(dirname "$2")" && put "$1" "$2" 0644) 2>/dev/null; then
		rm -f "$2.new.$$" 2>/dev/null || true
		say "skipped $2: $(dirname "$2") cannot be written"
	fi
}

ensure_user() {
	[ "$system" = yes ] && [ "$os" = linux ] || return 0
	id proxmops >/dev/null 2>&1 && return 0
	if command -v useradd >/dev/null 2>&1; then
		nologin=/usr/sbin/nologin
		[ -x "$nologin" ] || nologin=/bin/false
		useradd --system --user-group --home-dir /var/lib/proxmops --no-create-home --shell "$nologin" proxmops
	elif command -v adduser >/dev/null 2>&1; then
		adduser -S -D -H -h /var/lib/proxmops -s /bin/false proxmops
	else
		die "cannot create the proxmops user: neither useradd nor adduser is installed"
	fi
}

write_config() { # SRC: the example configuration from the archive
	[ -e "$confdir/proxmops.yaml" ] && return 0
	mkdir -p "$confdir"
	put "$1" "$confdir/proxmops.yaml" 0640
	if [ "$system" = yes ]; then
		chgrp proxmops "$confdir" "$confdir/proxmops.yaml"
		chmod 0750 "$confdir"
	fi
}

install_files() { # DIR of the unpacked archive
	src=$1
	[ -f "$src/proxmops" ] || die "the archive has no proxmops binary"
	put "$src/proxmops" "$bindir/proxmops" 0755
	if [ -d "$src/completions" ]; then
		[ ! -f "$src/completions/proxmops.bash" ] || put_extra "$src/completions/proxmops.bash" "$bashdir/proxmops"
		[ ! -f "$src/completions/proxmops.zsh" ] || put_extra "$src/completions/proxmops.zsh" "$zshdir/_proxmops"
		[ ! -f "$src/completions/proxmops.fish" ] || put_extra "$src/completions/proxmops.fish" "$fishdir/proxmops.fish"
	fi
	if [ -d "$src/manpages" ]; then
		for page in "$src"/manpages/*.1; do
			[ ! -f "$page" ] || put_extra "$page" "$mandir/$(basename "$page")"
		done
	fi
	have_systemd || return 0
	[ -f "$src/proxmops.service" ] || die "the archive has no proxmops.service"
	[ -f "$src/proxmops.yaml" ] || die "the archive has no proxmops.yaml"
	ensure_user
	put "$src/proxmops.service" "$unitdir/proxmops.service" 0644
	mkdir -p "$statedir"
	chmod 0700 "$statedir"
	[ "$system" = yes ] && chown proxmops:proxmops "$statedir"
	write_config "$src/proxmops.yaml"
}

do_install() {
	need_root
	url=$(base_url)
	archive="proxmops_${os}_${arch}.tar.gz"
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/proxmops-install.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	say "downloading $url/$archive"
	download "$url/$archive" "$tmp/$archive"
	download "$url/checksums.txt" "$tmp/checksums.txt"
	want=$(awk -v f="$archive" '$2 == f || $2 == "*" f { print $1; exit }' "$tmp/checksums.txt")
	[ -n "$want" ] || die "checksums.txt has no entry for $archive"
	got=$(sha256 "$tmp/$archive")
	if [ "$got" != "$want" ]; then
		die "checksum mismatch for $archive: expected $want, got $got; nothing was installed"
	fi
	say "checksum verified ($got)"
	mkdir "$tmp/x"
	tar -xzf "$tmp/$archive" -C "$tmp/x"
	was_active=no
	if have_systemd && systemd_running && systemctl is-active --quiet proxmops 2>/dev/null; then
		was_active=yes
	fi
	install_files "$tmp/x"
	say "installed $("$bindir/proxmops" version 2>/dev/null || echo proxmops) to $bindir/proxmops"
	if ! have_systemd; then
		say "no systemd service on $os: run 'proxmops serve' yourself (e.g. under launchd)"
		return 0
	fi
	if [ "$start" = no ] || ! systemd_running; then
		say "service installed to $unitdir/proxmops.service, not started"
		[ "$start" = no ] || say "systemd is not running here: start 'proxmops serve' yourself"
		return 0
	fi
	systemctl daemon-reload
	systemctl enable proxmops >/dev/null 2>&1
	if [ "$was_active" = yes ]; then
		systemctl restart proxmops
		say "service restarted with the new version"
	else
		systemctl start proxmops
		say "service started; the first-run setup token is in $statedir/proxmops.db.setup-token (also in journalctl -u proxmops)"
	fi
	say "configuration: $confdir/proxmops.yaml, state: $statedir"
}

do_uninstall() {
	need_root
	if have_systemd && systemd_running; then
		systemctl disable --now proxmops >/dev/null 2>&1 || true
	fi
	rm -f "$bindir/proxmops" "$unitdir/proxmops.service" \
		"$bashdir/proxmops" "$zshdir/_proxmops" "$fishdir/proxmops.fish" \
		"$mandir"/proxmops.1 "$mandir"/proxmops-*.1
	if have_systemd && systemd_running; then
		systemctl daemon-reload
	fi
	say "removed the binary, completions, man pages and the service"
	say "kept $statedir (database and key) and $confdir; delete them to remove everything"
}

detect_platform
set_dirs
case "$action" in
install) do_install ;;
uninstall) do_uninstall ;;
esac
