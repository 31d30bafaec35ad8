package pvesim

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"
	"time"
)

const mib = 1 << 20

func TestWgetDotsPrintsWgetGigaRows(t *testing.T) {
	full := " ........ ........ ........ ........"
	blank := "                                    "
	type step struct {
		add  int64
		at   time.Duration
		want []string
	}
	tests := []struct {
		name   string
		total  int64
		steps  []step
		end    time.Duration
		finish string
	}{
		{
			name:  "rows head with their start offset and end with percent, rate and time left; a download ending on a row prints an empty last row",
			total: 128 * mib,
			steps: []step{
				{32 * mib, 8 * time.Second, []string{"     0K" + full + " 25% 4.00M 24s"}},
				{32 * mib, 16 * time.Second, []string{" 32768K" + full + " 50% 4.00M 16s"}},
				{32 * mib, 24 * time.Second, []string{" 65536K" + full + " 75% 4.00M 8s"}},
				{32 * mib, 32 * time.Second, []string{" 98304K" + full + "100% 4.00M 0s"}},
			},
			end:    32 * time.Second,
			finish: "131072K" + blank + "100% 0.00 =32s",
		},
		{
			name:  "the last row shows its dots, blanks for the rest, and the whole time; the percent is floored",
			total: 40*mib + mib/2,
			steps: []step{
				{mib / 2, time.Second / 2, nil},
				{40 * mib, 5 * time.Second / 2, []string{"     0K" + full + " 79% 12.8M 1s"}},
			},
			end:    3 * time.Second,
			finish: " 32768K ........                           100% 17.0M=3.0s",
		},
		{
			name:   "without a length: no percent, no time left",
			total:  -1,
			steps:  []step{{1024, 4 * time.Millisecond, nil}},
			end:    4 * time.Millisecond,
			finish: "     0K" + blank + "  250K=0.004s",
		},
		{
			name:  "a fast row: the rate in higher units, no decimals from 100 on",
			total: 64 * mib,
			steps: []step{
				{32 * mib, 250 * time.Millisecond, []string{"     0K" + full + " 50%  128M 0s"}},
				{32 * mib, 12 * time.Second, []string{" 32768K" + full + "100% 2.72M 0s"}},
			},
			end:    12*time.Second + 400*time.Millisecond,
			finish: " 65536K" + blank + "100% 0.00 =12s",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := wgetDots{total: tt.total}
			for i, s := range tt.steps {
				got := w.add(s.add, s.at)
				if len(got) != len(s.want) {
					t.Fatalf("step %d: rows %q, want %q", i, got, s.want)
				}
				for j := range got {
					if got[j] != s.want[j] {
						t.Errorf("step %d row %d:\n got %q\nwant %q", i, j, got[j], s.want[j])
					}
				}
			}
			if got := w.finish(tt.end); got != tt.finish {
				t.Errorf("last row:\n got %q\nwant %q", got, tt.finish)
			}
		})
	}
}

func TestWgetShortTimeAndDecimalAsWget(t *testing.T) {
	times := map[int]string{0: "0s", 99: "99s", 100: "1m40s", 5999: "99m59s", 6000: "1h40m", 48*3600 - 1: "47h59m", 48 * 3600: "2d0h", 100 * 86400: "100d"}
	for secs, want := range times {
		if got := wgetShortTime(secs); got != want {
			t.Errorf("wgetShortTime(%d) = %q, want %q", secs, got, want)
		}
	}
	decimals := map[float64]string{12.4: "12", 9.96: "10", 9.94: "9.9", 1.25: "1.2", 0.5: "0.5", 0.004: "0.004", 0.0007: "0.001", 0.0001: "0"}
	for n, want := range decimals {
		if got := wgetDecimal(n); got != want {
			t.Errorf("wgetDecimal(%v) = %q, want %q", n, got, want)
		}
	}
}

// A download over HTTP logs wget's rows, a row per 32 MiB, into its task log.
func TestDownloadLogsWgetRows(t *testing.T) {
	body := bytes.Repeat([]byte{0x20}, 66*mib)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
	}))
	t.Cleanup(hs.Close)
	c := newClient(t, startSim(t, Options{}))
	upid := c.mustOK("POST", "/nodes/pve1/storage/local/download-url", vals("content", "iso", "filename", "big.iso", "url", hs.URL+"/big.iso")).str(t)
	if st := c.waitTask(upid); st != "OK" {
		t.Fatalf("download: %s", st)
	}
	rate := ` +[0-9.]+[ KMGT]`
	want := []*regexp.Regexp{
		regexp.MustCompile(`^downloading ` + regexp.QuoteMeta(hs.URL) + `/big\.iso to /var/lib/vz/template/iso/big\.iso$`),
		regexp.MustCompile(`^     0K( \.{8}){4} 48%` + rate + ` \d+s$`),
		regexp.MustCompile(`^ 32768K( \.{8}){4} 96%` + rate + ` \d+s$`),
		regexp.MustCompile(`^ 65536K \.\. {6}( {9}){3}100%` + rate + `=[0-9.]+s$`),
		regexp.MustCompile(`^download of '` + regexp.QuoteMeta(hs.URL) + `/big\.iso' to '/var/lib/vz/template/iso/big\.iso' finished$`),
		regexp.MustCompile(`^TASK OK$`),
	}
	lines := taskLog(c, upid)
	if len(lines) != len(want) {
		t.Fatalf("task log %q", lines)
	}
	for i, re := range want {
		if !re.MatchString(lines[i]) {
			t.Errorf("line %d %q does not match %s", i, lines[i], re)
		}
	}
}
