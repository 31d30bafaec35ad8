// Package provision applies a guest's spec.provision over SSH: packages
// (apt, apk or dnf, chosen from /etc/os-release), files (written through
// SFTP, or the shell when the server has no SFTP subsystem), copied
// repository directories, then commands run with /bin/sh -c; a failing
// step stops the run with its exit status and the last lines of output.
//
// Inputs holds what is applied; its Record (a hash of everything, and a
// short hash per part) is written by the engine as one line of the guest's
// description (LinePrefix), so that a plan knows without SSH whether the
// guest is provisioned with the current inputs and can name what changed.
//
// Keys holds proxmops' client key (a configured file, or an ed25519 key
// generated on first use and kept encrypted in the Store) and pins each
// guest's host key on first contact: a later, different host key fails
// with a HostKeyError until the guest is recreated (a new VMID) or the pin
// is reset.
package provision
