package main

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

func TestSysmonGODEBUG(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		change   bool
	}{
		{"", sysmonSchedtrace, true},
		{"madvdontneed=1", "madvdontneed=1," + sysmonSchedtrace, true},
		{"schedtrace=0", "schedtrace=0", false},                           // the opt-out
		{"gctrace=1, schedtrace=500", "gctrace=1, schedtrace=500", false}, // the user's own
		{"schedtraced=1", "schedtraced=1," + sysmonSchedtrace, true},      // another name
	} {
		got, change := sysmonGODEBUG(tc.in)
		if got != tc.want || change != tc.change {
			t.Errorf("sysmonGODEBUG(%q) = %q, %v; want %q, %v", tc.in, got, change, tc.want, tc.change)
		}
	}
}

// sysmonChildEnv makes the test binary, run by TestExecWithSysmonBackoff, print its
// pid and GODEBUG, and execute itself as the broker's main does.
const sysmonChildEnv = "BROKER_TEST_SYSMON_CHILD"

func TestExecWithSysmonBackoff(t *testing.T) {
	if os.Getenv(sysmonChildEnv) != "" {
		fmt.Printf("pid=%d GODEBUG=%s\n", os.Getpid(), os.Getenv("GODEBUG"))
		if err := execWithSysmonBackoff(); err != nil {
			fmt.Println(err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestExecWithSysmonBackoff$")
	cmd.Env = append(os.Environ(), sysmonChildEnv+"=1", "GODEBUG=madvdontneed=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	// One exec: the first run with the GODEBUG it was given, the second (same process)
	// with schedtrace added, and no third.
	pid := cmd.Process.Pid
	want := fmt.Sprintf("pid=%d GODEBUG=madvdontneed=1\npid=%d GODEBUG=madvdontneed=1,%s\n", pid, pid, sysmonSchedtrace)
	if string(out) != want {
		t.Fatalf("child printed\n%s\nwant\n%s", out, want)
	}
}
