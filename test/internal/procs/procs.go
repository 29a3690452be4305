// Package procs starts and stops the processes that the compatibility and end-to-end
// suites run against: our binaries (bin/namesrv, bin/broker) and the Apache RocketMQ Java
// name server, broker and client programs fetched from Maven Central.
//
// Every process runs in its own process group with its stdout and stderr going to a log
// file, is sent SIGKILL by the kernel if the test binary dies (Pdeathsig), and is stopped
// with its whole group by Stop. Nothing here needs a *testing.T, so a TestMain can own
// processes shared by several tests; the T helpers only add cleanup and failure reporting.
package procs

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Spec describes a process to start.
type Spec struct {
	Name    string   // short name, used for the log file name and in messages
	Path    string   // executable
	Args    []string // arguments after the executable
	Env     []string // extra environment (KEY=VALUE), appended to os.Environ()
	Dir     string   // working directory ("" = current)
	LogPath string   // file that receives stdout and stderr (required)
	// Stdin is the process's stdin (nil: /dev/null), e.g. the read end of a pipe whose
	// closing tells it to stop; the caller closes its own copy after Start.
	Stdin *os.File
}

// Proc is a started process.
type Proc struct {
	Name    string
	LogPath string
	Cmd     *exec.Cmd

	done    chan struct{}
	waitErr error
	stop    sync.Once
}

// Start starts the process described by s in a new process group.
func Start(s Spec) (*Proc, error) {
	if s.LogPath == "" {
		return nil, fmt.Errorf("procs: %s: no log path", s.Name)
	}
	if err := os.MkdirAll(filepath.Dir(s.LogPath), 0o755); err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(s.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(logf, "### %s: %s %s\n", time.Now().Format(time.RFC3339), s.Path, strings.Join(s.Args, " "))
	cmd := exec.Command(s.Path, s.Args...)
	cmd.Dir = s.Dir
	cmd.Env = append(os.Environ(), s.Env...)
	cmd.Stdout = logf
	cmd.Stderr = logf
	if s.Stdin != nil { // a nil *os.File in the io.Reader would not be /dev/null
		cmd.Stdin = s.Stdin
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("procs: start %s (%s): %w", s.Name, s.Path, err)
	}
	p := &Proc{Name: s.Name, LogPath: s.LogPath, Cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process id (and process group id).
func (p *Proc) Pid() int { return p.Cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited, and how.
func (p *Proc) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.waitErr
	default:
		return false, nil
	}
}

// Stop sends SIGTERM to the process group, waits up to grace for the process to exit, then
// sends SIGKILL to the group. It is safe to call more than once and after the process exited.
func (p *Proc) Stop(grace time.Duration) {
	p.stop.Do(func() {
		pgid := p.Pid()
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(grace):
		}
		// Kill whatever is left in the group (children of the process, or the process itself).
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
		}
	})
}

// Kill sends SIGKILL to the process group at once and waits for the process to exit.
func (p *Proc) Kill() {
	p.stop.Do(func() {
		_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
		}
	})
}

// Log returns the whole log file.
func (p *Proc) Log() string {
	b, _ := os.ReadFile(p.LogPath)
	return string(b)
}

// Tail returns the last n lines of the log file.
func (p *Proc) Tail(n int) string { return TailFile(p.LogPath, n) }

// TailFile returns the last n lines of a file ("" if it cannot be read).
func TailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// WaitForLog waits until the log file contains substr, the process exits, or ctx ends.
func (p *Proc) WaitForLog(ctx context.Context, substr string) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if logContains(p.LogPath, substr) {
			return nil
		}
		select {
		case <-p.done:
			if logContains(p.LogPath, substr) {
				return nil
			}
			return fmt.Errorf("%s exited (%v) before logging %q; log %s:\n%s", p.Name, p.waitErr, substr, p.LogPath, p.Tail(40))
		case <-ctx.Done():
			return fmt.Errorf("%s did not log %q: %w; log %s:\n%s", p.Name, substr, ctx.Err(), p.LogPath, p.Tail(40))
		case <-tick.C:
		}
	}
}

func logContains(path, substr string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	needle := []byte(substr)
	for sc.Scan() {
		if bytes.Contains(sc.Bytes(), needle) {
			return true
		}
	}
	return false
}

// WaitForTCP waits until addr accepts TCP connections, the process exits, or ctx ends.
func (p *Proc) WaitForTCP(ctx context.Context, addr string) error {
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited (%v) before listening on %s; log %s:\n%s", p.Name, p.waitErr, addr, p.LogPath, p.Tail(40))
		case <-ctx.Done():
			return fmt.Errorf("%s is not listening on %s: %w; log %s:\n%s", p.Name, addr, ctx.Err(), p.LogPath, p.Tail(40))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// FreePortWith returns a free port p on 127.0.0.1 such that p+d is free too for every
// offset d given (e.g. -2 and +1 for a Java broker's fast and HA ports).
func FreePortWith(offsets ...int) (int, error) {
	for range 50 {
		p, err := FreePort()
		if err != nil {
			return 0, err
		}
		ok := true
		for _, d := range offsets {
			q := p + d
			if q <= 1024 || q > 65535 || !portFree(q) {
				ok = false
				break
			}
		}
		if ok {
			return p, nil
		}
	}
	return 0, errors.New("procs: no free port block found")
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}
