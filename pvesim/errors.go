package pvesim

import (
	"strings"
)

// reasonPhrase is the first line of a message, as pve-http-server puts it
// in the status line.
func reasonPhrase(msg string) string {
	if i := strings.IndexAny(msg, "\r\n"); i >= 0 {
		msg = msg[:i]
	}
	return msg
}
