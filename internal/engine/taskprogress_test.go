package engine

import "testing"

func TestPercentOfReadsProxmoxProgressLines(t *testing.T) {
	for _, tc := range []struct {
		line string
		pct  int
		ok   bool
	}{
		{"transferred 1.0 GiB of 2.0 GiB (50.00%)", 50, true},                   // qemu-img convert
		{"drive-scsi0: transferred 3.2 GiB of 32.0 GiB (9.99%) in 5s", 9, true}, // block mirror
		{"drive-scsi0: transferred 32.0 GiB of 32.0 GiB (100.00%) in 1m 2s, ready", 100, true},
		{"  65536K ........ ........ ........ ........  42% 12.3M 5s", 42, true}, // wget dot:giga
		{"    64K ........ ........ ........ ........ 100% 120.5M", 100, true},
		{"downloading http://127.0.0.1/x.qcow2 to /var/lib/vz/import/x.qcow2", 0, false},
		{"cpu usage 95% of one core", 0, false},
		{"transferred 1 of 2 (150.00%)", 0, false},
	} {
		pct, ok := percentOf(tc.line)
		if pct != tc.pct || ok != tc.ok {
			t.Errorf("%q: %d %v, want %d %v", tc.line, pct, ok, tc.pct, tc.ok)
		}
	}
}
