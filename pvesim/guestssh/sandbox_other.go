//go:build !linux

package guestssh

import (
	"errors"
	"os/exec"
)

// sandboxSpec is what one sandboxed process runs (see the Linux file).
type sandboxSpec struct {
	Root     string
	Hostname string
	Mode     string
	Argv     []string
	Env      []string
	Dir      string
}

// hostReadOnly is empty where the sandbox does not exist.
var hostReadOnly []string

// sandboxDevices is empty where the sandbox does not exist.
var sandboxDevices []string

// sandboxCommand fails: the guest sandbox needs Linux namespaces.
func sandboxCommand(sandboxSpec) (*exec.Cmd, error) {
	return nil, errors.New("guest SSH commands need Linux (mount namespaces)")
}
