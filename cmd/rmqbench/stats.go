package main

import (
	"fmt"
	"io"
	"math/bits"
	"sync/atomic"
	"text/tabwriter"
	"time"
)

// histogram counts latencies in microseconds: exact below 128 µs, then 64 buckets per
// power of two (under 1.6 % error), up to about 2^40 µs. Safe for concurrent use.
type histogram struct {
	counts [128 + 34*64]atomic.Int64
}

func bucketOf(us int64) int {
	if us < 0 {
		us = 0
	}
	if us < 128 {
		return int(us)
	}
	shift := bits.Len64(uint64(us)) - 7 // us>>shift is in [64, 127]
	i := 128 + (shift-1)*64 + int(us>>shift) - 64
	if i >= len(histogram{}.counts) {
		i = len(histogram{}.counts) - 1
	}
	return i
}

// bucketValue is the midpoint of bucket i in µs.
func bucketValue(i int) float64 {
	if i < 128 {
		return float64(i)
	}
	shift := (i-128)/64 + 1
	lo := int64((i-128)%64+64) << shift
	return float64(lo) + float64(int64(1)<<shift)/2
}

func (h *histogram) add(us int64) { h.counts[bucketOf(us)].Add(1) }

// quantile returns the q-quantile (0..1) in µs, 0 when empty.
func (h *histogram) quantile(q float64) float64 {
	var total int64
	for i := range h.counts {
		total += h.counts[i].Load()
	}
	if total == 0 {
		return 0
	}
	rank := int64(q*float64(total-1)) + 1
	var seen int64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			return bucketValue(i)
		}
	}
	return bucketValue(len(h.counts) - 1)
}

// latency accumulates one latency series: count, sum, run max, interval max, histogram.
type latency struct {
	n, sum, max, intervalMax atomic.Int64 // sums and maxima in µs
	hist                     histogram
}

func (l *latency) add(d time.Duration) {
	us := d.Microseconds()
	l.n.Add(1)
	l.sum.Add(us)
	l.hist.add(us)
	storeMax(&l.max, us)
	storeMax(&l.intervalMax, us)
}

func storeMax(a *atomic.Int64, v int64) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

func ms(us float64) float64 { return us / 1000 }

// snapshot is a reading of counters for the interval lines.
type snapshot struct {
	at       time.Time
	n, sum   int64
	failures [2]int64
}

// summaryRow is one line of the final table.
type summaryRow struct {
	name     string
	duration time.Duration
	count    int64
	bytes    int64
	lat      *latency
}

func printSummary(w io.Writer, title string, rows []summaryRow, extra []string) {
	fmt.Fprintf(w, "\n%s\n", title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "series\tduration(s)\ttotal\tTPS\tMiB/s\tavg(ms)\tp50(ms)\tp99(ms)\tp99.9(ms)\tmax(ms)\t")
	for _, r := range rows {
		v := r.values()
		fmt.Fprintf(tw, "%s\t%.1f\t%d\t%.0f\t%.1f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t\n", r.name, v.secs, r.count, v.tps, v.mibs,
			v.avg, v.p50, v.p99, v.p999, v.max)
	}
	tw.Flush()
	for _, e := range extra {
		fmt.Fprintln(w, e)
	}
}

// rowValues are a summary row's figures: seconds, TPS, MiB/s and latencies in ms.
type rowValues struct {
	secs, tps, mibs, avg, p50, p99, p999, max float64
}

func (r summaryRow) values() rowValues {
	v := rowValues{secs: r.duration.Seconds()}
	if v.secs > 0 {
		v.tps = float64(r.count) / v.secs
		v.mibs = float64(r.bytes) / v.secs / (1 << 20)
	}
	if n := r.lat.n.Load(); n > 0 {
		v.avg = ms(float64(r.lat.sum.Load()) / float64(n))
	}
	v.p50, v.p99, v.p999 = ms(r.lat.hist.quantile(0.5)), ms(r.lat.hist.quantile(0.99)), ms(r.lat.hist.quantile(0.999))
	v.max = ms(float64(r.lat.max.Load()))
	return v
}

// printResults writes one machine-readable line per row, the summary's figures as
// key=value fields, then tail (run-wide fields: errors=, client_cpu_s=, ...):
//
//	RESULT client=go mode=producer series=send messages=N seconds=S tps=T mib_s=M avg_ms=… p50_ms=… p99_ms=… p999_ms=… max_ms=… errors=E client_cpu_s=C
//
// hack/bench-vs-java.sh reads these; the Java load generator
// (test/compat/java/src/org/openrmq/bench/JavaBench.java) prints the same with client=java.
func printResults(w io.Writer, mode string, rows []summaryRow, tail string) {
	for _, r := range rows {
		v := r.values()
		fmt.Fprintf(w, "RESULT client=go mode=%s series=%s messages=%d seconds=%.3f tps=%.0f mib_s=%.1f avg_ms=%.3f p50_ms=%.3f p99_ms=%.3f p999_ms=%.3f max_ms=%.3f %s\n",
			mode, r.name, r.count, v.secs, v.tps, v.mibs, v.avg, v.p50, v.p99, v.p999, v.max, tail)
	}
}

// cpuSince is this process's user+system CPU seconds since before (from processCPU) as
// the client_cpu_s field shows it, or "-" where the platform does not report it.
func cpuSince(before time.Duration) string {
	now := processCPU()
	if now < 0 || before < 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", (now - before).Seconds())
}
