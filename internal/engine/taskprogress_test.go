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
		// wget --progress=dot:giga as download-url's log keeps it (GNU wget
		// src/progress.c: the row's start offset, "%3d%%" right after the dots).
		{"     0K ........ ........ ........ ........ 25% 3.92M 23s", 25, true},
		{" 32768K ........ ........ ........ ........ 50% 4.10M 15s", 50, true},
		{" 98304K ........ ........ ........ ........100% 4.20M=31s", 100, true}, // a full last row: no blank before 100
		{"131072K ...                                100% 4.20M=31s", 100, true}, // dot_finish's short last row
		{"  65536K ........ ........ ........ ........  42% 12.3M 5s", 42, true},
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
