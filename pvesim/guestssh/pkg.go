package guestssh

// Package-manager stand-ins. A guest's /usr/local/sbin (first in the
// PATH its SSH commands get) holds its distribution's package manager
// (apt-get and apt; apk; dnf and yum) and query tool (dpkg-query and dpkg;
// rpm) as one shell script that records installed packages in
// /var/lib/pvesim/installed-packages, one name a line, without any
// network; /usr/local/bin/sudo runs its command (commands run as root).

import (
	"os"
)

// standInNames lists the commands each package manager's stand-in answers.
var standInNames = map[string][]string{
	"apt": {"apt-get", "apt", "dpkg-query", "dpkg"},
	"apk": {"apk"},
	"dnf": {"dnf", "yum", "rpm"},
}

// pkgStandIn is the stand-in, dispatching on the name it is called by.
// A package whose name starts with "missing-" does not exist, so tests
// can make an install fail as a real one fails on an unknown name.
const pkgStandIn = `#!/bin/sh
# pvesim package-manager stand-in: records installs in $db, no network.
db=/var/lib/pvesim/installed-packages
mkdir -p /var/lib/pvesim && touch "$db"
prog=$(basename "$0")
verb=""
pkgs=""
skip=0
for a in "$@"; do
	if [ "$skip" = 1 ]; then skip=0; continue; fi
	case "$a" in
	-o|-c|-t|-X|--option|--target-release|--repository|--setopt|--releasever) skip=1 ;;
	-f|--showformat) [ "$prog" = dpkg-query ] && skip=1 ;;
	-W|-s|-l|-q|-qa) case "$prog" in dpkg-query|dpkg|rpm) [ -z "$verb" ] && verb=$a ;; esac ;;
	-*) ;;
	*) if [ -z "$verb" ]; then verb=$a; else pkgs="$pkgs $a"; fi ;;
	esac
done
name_of() { n=${1%%=*}; n=${n%%:*}; echo "$n"; }
installed() { grep -qx "$1" "$db"; }
notfound() {
	case "$prog" in
	apt-get|apt) echo "E: Unable to locate package $1" >&2; exit 100 ;;
	apk) echo "ERROR: unable to select packages:" >&2; echo "  $1 (no such package):" >&2; exit 1 ;;
	*) echo "No match for argument: $1" >&2; echo "Error: Unable to find a match: $1" >&2; exit 1 ;;
	esac
}
install() {
	for p in $pkgs; do
		n=$(name_of "$p")
		case "$n" in missing-*|"") notfound "$n" ;; esac
	done
	for p in $pkgs; do
		n=$(name_of "$p")
		if installed "$n"; then
			echo "$n is already installed"
		else
			echo "$n" >>"$db"
			echo "Setting up $n ..."
		fi
	done
}
remove() {
	for p in $pkgs; do
		n=$(name_of "$p")
		grep -vx "$n" "$db" >"$db.new"; mv "$db.new" "$db"
		echo "Removing $n ..."
	done
}
query() {
	rc=0
	for p in $pkgs; do
		n=$(name_of "$p")
		if installed "$n"; then
			case "$prog" in
			dpkg-query|dpkg) echo "Package: $n"; echo "Status: install ok installed" ;;
			rpm) echo "$n-1.0-1.pvesim.noarch" ;;
			apk) echo "$n" ;;
			esac
		else
			case "$prog" in
			dpkg-query|dpkg) echo "dpkg-query: package '$n' is not installed and no information is available" >&2 ;;
			rpm) echo "package $n is not installed" ;;
			esac
			rc=1
		fi
	done
	exit $rc
}
case "$prog:$verb" in
apt-get:install|apt:install|apk:add|dnf:install|yum:install) install ;;
apt-get:remove|apt-get:purge|apt:remove|apt:purge|apk:del|dnf:remove|dnf:erase|yum:remove|yum:erase) remove ;;
dpkg-query:-W|dpkg-query:-s|dpkg:-s|rpm:-q|apk:info) [ -n "$pkgs" ] && query; cat "$db" ;;
dpkg-query:-l|dpkg:-l|rpm:-qa) cat "$db" ;;
apt-get:update|apt:update) echo "Reading package lists... Done" ;;
*) ;;
esac
exit 0
`

// sudoStandIn runs its command: every SSH command already runs as root.
const sudoStandIn = `#!/bin/sh
# pvesim stand-in for sudo: guest commands already run as root.
while [ $# -gt 0 ]; do
	case "$1" in
	-u|-g|-C|-D|-h|-p|-r|-t|-U) shift 2 ;;
	--) shift; break ;;
	-*) shift ;;
	*) break ;;
	esac
done
[ $# -eq 0 ] && exit 0
exec "$@"
`

// writeStandIns puts the distribution's stand-ins (rewritten at every
// start) into the tree.
func writeStandIns(root *os.Root, distro string) error {
	if err := root.WriteFile("usr/local/bin/sudo", []byte(sudoStandIn), 0o755); err != nil {
		return err
	}
	pm := packageManager(distro)
	if pm == "" {
		return nil
	}
	if err := root.WriteFile("usr/local/sbin/pvesim-pkg", []byte(pkgStandIn), 0o755); err != nil {
		return err
	}
	for _, name := range standInNames[pm] {
		path := "usr/local/sbin/" + name
		if _, err := root.Lstat(path); err == nil {
			continue
		}
		if err := root.Symlink("pvesim-pkg", path); err != nil {
			return err
		}
	}
	return nil
}
