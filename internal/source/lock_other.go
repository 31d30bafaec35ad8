//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package source

import "os"

// Without flock, only the in-process lock applies.
func tryFlock(*os.File) (bool, error) { return true, nil }

func unflock(*os.File) {}
