package demo

import (
	"bytes"
	"strings"
	"testing"
)

func TestBannerNamesGuestSSHOnlyWhenOn(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Info
		want bool
	}{
		{"guest SSH on", Info{GuestSSHPort: 2222, GuestRoot: "/tmp/d/guests"}, true},
		{"guest SSH off", Info{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			printBanner(&b, tc.in)
			line := "serve SSH on port 2222; their files are in /tmp/d/guests"
			if got := strings.Contains(b.String(), line); got != tc.want {
				t.Errorf("banner has the guest SSH line: %v, want %v\n%s", got, tc.want, b.String())
			}
			if !tc.want && strings.Contains(b.String(), "SSH") {
				t.Errorf("banner names SSH while it is off:\n%s", b.String())
			}
		})
	}
}
