package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
)

// The Go runtime's system monitor (sysmon) sleeps deeply while every P is idle, and a
// syscall that ends such a pause wakes it with its polling period reset to 20 µs; it
// backs off again only after 50 polls (golang/go#18236: the period is not tunable).
// A broker driven by request/response clients goes idle between bursts thousands of
// times a second, so sysmon runs at 20 µs nearly all the time: on the 2-vCPU VMs of
// `make bench-java` that was ~5,000 wake-ups a second, 40 % of the broker's context
// switches and a sixth of its CPU per message (docs/benchmarks.md, 2026-12-05).
//
// With GODEBUG=schedtrace set, sysmon skips the deep sleep and keeps its back-off (up
// to 10 ms between polls while it has nothing to retake), which the broker wants. The
// setting's other effect is a SCHED line on stderr every schedtrace milliseconds:
// sysmonSchedtrace makes that once in 24.8 days (and once at start on a host up
// longer than that, where the monotonic clock already is past it), plus the
// scheduler's state printed after a fatal error.
//
// The runtime reads GODEBUG once, before main, so the broker sets it by executing
// itself again, first thing, unless GODEBUG already names schedtrace
// (GODEBUG=schedtrace=0 keeps the runtime's own behaviour).
const sysmonSchedtrace = "schedtrace=2147483647" // ms; the largest the runtime takes (int32)

// sysmonGODEBUG returns the GODEBUG to run with and whether it differs from godebug.
func sysmonGODEBUG(godebug string) (string, bool) {
	for _, kv := range strings.Split(godebug, ",") {
		if strings.HasPrefix(strings.TrimSpace(kv), "schedtrace=") {
			return godebug, false
		}
	}
	if godebug == "" {
		return sysmonSchedtrace, true
	}
	return godebug + "," + sysmonSchedtrace, true
}

// execWithSysmonBackoff executes the broker again with sysmonGODEBUG's GODEBUG, the
// same arguments and otherwise the same environment. It returns only when there is
// nothing to do or the exec failed; the broker then runs as it is.
func execWithSysmonBackoff() error {
	godebug, change := sysmonGODEBUG(os.Getenv("GODEBUG"))
	if !change {
		return nil
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GODEBUG=") })
	// /proc/self/exe: this very binary, even if its path was replaced or removed since.
	err := syscall.Exec("/proc/self/exe", os.Args, append(env, "GODEBUG="+godebug))
	return fmt.Errorf("executing itself with GODEBUG=%s: %w", godebug, err)
}
