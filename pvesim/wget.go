package pvesim

import (
	"fmt"
	"strings"
	"time"
)

// wget --progress=dot:giga, as download-url's task log keeps it: pve-common
// PVE/Tools.pm download_file_from_url runs `wget --progress=dot:giga` through
// run_command, and every line wget writes is a line of the task log. The
// lines follow GNU wget's src/progress.c (dot_draw, print_row_stats,
// dot_finish; "giga": a dot per MiB, a blank before every 8, 32 to a row):
//
//	     0K ........ ........ ........ ........ 25% 3.92M 23s
//	 32768K ........ ........ ........ ........ 50% 4.10M 15s
//	 ...
//	131072K ...                                100% 4.20M=31s
//
// A row is headed by the offset it starts at ("%6sK"); a full row ends with
// the percent reached, floored ("%3d%%", only when the length is known), the
// row's rate (" %4.*f%c", calc_rate in 1024 units with 2, 1 or 0 decimals)
// and the time left at the average speed (" %s", eta_to_human_short,
// condensed). The last row (dot_finish) shows the dots it got, blanks for the
// rest, and ends with the percent, its rate and "=" and the whole time.
const (
	wgetDotBytes   = 1 << 20
	wgetDotSpacing = 8
	wgetDotsInLine = 32
	wgetRowBytes   = wgetDotBytes * wgetDotsInLine
)

// wgetDots follows one download's bytes and prints its rows.
type wgetDots struct {
	total   int64 // the Content-Length, or <= 0 when the server gave none
	done    int64
	rows    int64
	lastRow time.Duration // when the last stats were printed (last_timer_value)
}

// add counts n more bytes, received elapsed after the start, and returns the
// rows they complete.
func (w *wgetDots) add(n int64, elapsed time.Duration) []string {
	w.done += n
	var out []string
	for (w.rows+1)*wgetRowBytes <= w.done {
		start := w.rows * wgetRowBytes
		w.rows++
		out = append(out, fmt.Sprintf("%6dK%s%s", start>>10, wgetRow(wgetDotsInLine), w.stats(wgetRowBytes, elapsed, false)))
	}
	return out
}

// finish is the last row, once the download ended elapsed after its start.
func (w *wgetDots) finish(elapsed time.Duration) string {
	start := w.rows * wgetRowBytes
	rest := w.done - start
	return fmt.Sprintf("%6dK%s%s", start>>10, wgetRow(int(rest/wgetDotBytes)), w.stats(rest, elapsed, true))
}

// wgetRow is a row's dots, blanks after the first `dots`.
func wgetRow(dots int) string {
	var b strings.Builder
	for i := 0; i < wgetDotsInLine; i++ {
		if i%wgetDotSpacing == 0 {
			b.WriteByte(' ')
		}
		if i < dots {
			b.WriteByte('.')
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// stats is print_row_stats: rowBytes is what the row stands for.
func (w *wgetDots) stats(rowBytes int64, elapsed time.Duration, last bool) string {
	shown := w.rows * wgetRowBytes
	if last {
		shown = w.done
	}
	var b strings.Builder
	if w.total > 0 {
		fmt.Fprintf(&b, "%3d%%", int(100*float64(shown)/float64(w.total)))
	}
	b.WriteString(" " + wgetRate(rowBytes, (elapsed-w.lastRow).Seconds()))
	w.lastRow = elapsed
	switch {
	case !last && w.total > 0:
		eta := elapsed.Seconds() * float64(max(w.total-shown, 0)) / float64(max(shown, 1))
		b.WriteString(" " + wgetShortTime(int(eta+0.5)))
	case last && elapsed >= 10*time.Second:
		b.WriteString("=" + wgetShortTime(int(elapsed.Seconds()+0.5)))
	case last:
		b.WriteString("=" + wgetDecimal(elapsed.Seconds()) + "s")
	}
	return b.String()
}

// wgetRate is calc_rate printed as print_row_stats does (" %4.*f%c").
func wgetRate(bytes int64, secs float64) string {
	if secs <= 0 {
		secs = 0.5e-9 // half the timer's resolution, as calc_rate assumes
	}
	rate := float64(bytes) / secs
	unit := 0
	for unit < 4 && rate >= 1024 {
		rate /= 1024
		unit++
	}
	if unit == 4 && rate > 99.99 {
		rate = 99.99
	}
	prec := 2
	if rate >= 99.95 {
		prec = 0
	} else if rate >= 9.995 {
		prec = 1
	}
	return fmt.Sprintf("%4.*f%c", prec, rate, " KMGT"[unit])
}

// wgetShortTime is eta_to_human_short, condensed.
func wgetShortTime(secs int) string {
	switch {
	case secs < 100:
		return fmt.Sprintf("%ds", secs)
	case secs < 100*60:
		return fmt.Sprintf("%dm%ds", secs/60, secs%60)
	case secs < 48*3600:
		return fmt.Sprintf("%dh%dm", secs/3600, secs/60%60)
	case secs < 100*86400:
		return fmt.Sprintf("%dd%dh", secs/86400, secs/3600%24)
	}
	return fmt.Sprintf("%dd", secs/86400)
}

// wgetDecimal is wget's print_decimal.
func wgetDecimal(n float64) string {
	switch a := max(n, -n); {
	case a >= 9.95:
		return fmt.Sprintf("%.0f", n)
	case a >= 0.95:
		return fmt.Sprintf("%.1f", n)
	case a >= 0.001:
		return fmt.Sprintf("%.1g", n)
	case a >= 0.0005:
		return fmt.Sprintf("%.3f", n)
	}
	return "0"
}
