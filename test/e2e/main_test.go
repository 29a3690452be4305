// Package e2e runs the real bin/namesrv and bin/broker, built from this module in
// TestMain, on loopback ports and drives them with the official Go client
// (github.com/apache/rocketmq-client-go/v2).
//
// Every test uses its own topics and groups; tests that restart a broker start their
// own. Waits are bounded; a failure says what was waited for.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

var (
	binDir      string
	namesrvAddr string
	shared      *brokerProc // the broker most tests share
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if spec := os.Getenv(childEnv); spec != "" {
		return runChildConsumer(spec)
	}
	lvl := os.Getenv("E2E_CLIENT_LOG")
	if lvl == "" {
		lvl = "error"
	}
	rlog.SetLogLevel(lvl)
	dir, err := os.MkdirTemp("", "rmq-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binDir = filepath.Join(dir, "bin")
	for _, cmd := range []string{"namesrv", "broker"} {
		out, err := exec.Command("go", "build", "-o", filepath.Join(binDir, cmd), "github.com/openrmq/rocketmq-operator/cmd/"+cmd).CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "e2e: build %s: %v\n%s", cmd, err, out)
			return 1
		}
	}
	port := freePort(0)
	namesrvAddr = "127.0.0.1:" + strconv.Itoa(port)
	ns, err := startProc(filepath.Join(dir, "namesrv.log"), filepath.Join(binDir, "namesrv"), "-n", namesrvAddr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: namesrv:", err)
		return 1
	}
	defer ns.stop(syscall.SIGTERM)
	if err := waitListening(namesrvAddr, 10*time.Second); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: namesrv:", err, "\n", ns.output())
		return 1
	}
	// Quick transaction checks let TestTransactions see a check-back.
	shared, err = newBroker(dir, "broker-shared", map[string]string{"enablePropertyFilter": "true",
		"transactionCheckInterval": "1000", "transactionTimeOut": "1000"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: broker:", err)
		return 1
	}
	defer shared.stop(syscall.SIGTERM)
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "--- shared broker log (tail) ---\n%s\n", tail(shared.p.output(), 4000))
	}
	return code
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// handedOut are the ports freePort returned, with the neighbours a broker binds: brokers
// of parallel tests must not pick each other's fast channel (port-2) or HA port (port+1).
var (
	portMu    sync.Mutex
	handedOut = map[int]bool{}
)

// freePort returns a loopback port that is free, and, when fastOffset > 0 (a broker),
// whose port-fastOffset (the fast channel) and port+1 (the HA port of a master) are free
// too. No two calls return overlapping ranges.
func freePort(fastOffset int) int {
	portMu.Lock()
	defer portMu.Unlock()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			panic(err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		if fastOffset == 0 {
			l.Close()
			if handedOut[p] {
				continue
			}
			handedOut[p] = true
			return p
		}
		lo, hi := p-fastOffset, p+1
		if lo < 1024 || hi > 65535 {
			l.Close()
			continue
		}
		taken := false
		for q := lo; q <= hi; q++ {
			taken = taken || handedOut[q]
		}
		if taken {
			l.Close()
			continue
		}
		var held []net.Listener
		ok := true
		for _, q := range []int{lo, hi} {
			lq, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(q))
			if err != nil {
				ok = false
				break
			}
			held = append(held, lq)
		}
		l.Close()
		for _, lq := range held {
			lq.Close()
		}
		if ok {
			for q := lo; q <= hi; q++ {
				handedOut[q] = true
			}
			return p
		}
	}
}

func waitListening(addr string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not listening after %v: %v", addr, within, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// proc is a child process whose output is kept.
type proc struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	err  error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
	f  *os.File
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil {
		s.f.Write(p)
	}
	return s.b.Write(p)
}

func startProc(logPath, bin string, args ...string) (*proc, error) {
	f, _ := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	p := &proc{cmd: exec.Command(bin, args...), out: &syncBuffer{f: f}, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		p.err = p.cmd.Wait()
		if f != nil {
			f.Close()
		}
		close(p.done)
	}()
	return p, nil
}

func (p *proc) output() string {
	p.out.mu.Lock()
	defer p.out.mu.Unlock()
	return p.out.b.String()
}

// stop sends sig and waits up to 30 s for the exit (then kills).
func (p *proc) stop(sig syscall.Signal) error {
	select {
	case <-p.done:
		return p.err
	default:
	}
	p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
		return p.err
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("did not exit within 30s of %v", sig)
	}
}

// brokerProc is a running bin/broker with its own store folder.
type brokerProc struct {
	name, addr, dir, conf string
	namesrv               string // -n: the e2e name server unless extra["namesrvAddr"] says
	p                     *proc
}

// newBroker writes a broker.conf for name under parent and starts the broker.
func newBroker(parent, name string, extra map[string]string) (*brokerProc, error) {
	if _, ok := extra["listenPort"]; ok { // the caller chose the ports (HA tests)
		return newBrokerOn(parent, name, extra, 0)
	}
	// freePort probes its ports, but until the broker binds them an outgoing connection
	// of any process on the machine may take one as its ephemeral port: then the broker
	// stops at once with EADDRINUSE, and it starts again on other ports.
	for attempt := 1; ; attempt++ {
		b, err := newBrokerOn(parent, name, extra, freePort(2))
		if err == nil || attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			return b, err
		}
		os.RemoveAll(b.dir)
	}
}

// newBrokerOn starts a broker listening on port (0: the listenPort of extra).
func newBrokerOn(parent, name string, extra map[string]string, port int) (*brokerProc, error) {
	if port == 0 {
		port, _ = strconv.Atoi(extra["listenPort"])
	}
	b := &brokerProc{name: name, addr: "127.0.0.1:" + strconv.Itoa(port), dir: filepath.Join(parent, name), namesrv: namesrvAddr}
	if ns, ok := extra["namesrvAddr"]; ok {
		b.namesrv = ns
	}
	if err := os.MkdirAll(b.dir, 0o755); err != nil {
		return nil, err
	}
	conf := map[string]string{
		"brokerClusterName": "E2ECluster", "brokerName": name, "brokerId": "0", "brokerIP1": "127.0.0.1",
		"listenPort": strconv.Itoa(port), "storePathRootDir": filepath.Join(b.dir, "store"),
		"brokerRole": "ASYNC_MASTER", "flushDiskType": "ASYNC_FLUSH",
		// Small files keep the test's disk footprint low.
		"mappedFileSizeCommitLog": strconv.Itoa(64 << 20), "mappedFileSizeConsumeQueue": strconv.Itoa(20 * 20000),
		"maxHashSlotNum": "20000", "maxIndexNum": "80000",
		// A loaded 2-core CI machine must not answer "broker busy" (the Go client does
		// not retry SYSTEM_BUSY); flow control has tests of its own.
		"waitTimeMillsInSendQueue": "3000", "osPageCacheBusyTimeOutMills": "5000",
	}
	for k, v := range extra {
		conf[k] = v
	}
	var sb strings.Builder
	for k, v := range conf {
		fmt.Fprintf(&sb, "%s=%s\n", k, v)
	}
	b.conf = filepath.Join(b.dir, "broker.conf")
	if err := os.WriteFile(b.conf, []byte(sb.String()), 0o644); err != nil {
		return nil, err
	}
	return b, b.start()
}

func (b *brokerProc) start() error {
	p, err := startProc(filepath.Join(b.dir, "broker.log"), filepath.Join(binDir, "broker"), "-c", b.conf, "-n", b.namesrv)
	if err != nil {
		return err
	}
	b.p = p
	if err := p.waitListening(b.addr, 10*time.Second); err != nil {
		p.stop(syscall.SIGKILL)
		return fmt.Errorf("%w\n%s", err, p.output())
	}
	return nil
}

// waitListening is waitListening that gives up as soon as p exits.
func (p *proc) waitListening(addr string, within time.Duration) error {
	listening := make(chan error, 1)
	go func() { listening <- waitListening(addr, within) }()
	select {
	case err := <-listening:
		return err
	case <-p.done:
		return fmt.Errorf("%s: the process exited (%v) before listening", addr, p.err)
	}
}

func (b *brokerProc) stop(sig syscall.Signal) error { return b.p.stop(sig) }

// startTestBroker starts a broker owned by one test, stopped at its end.
func startTestBroker(t *testing.T, name string, extra map[string]string) *brokerProc {
	t.Helper()
	b, err := newBroker(t.TempDir(), name, extra)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b.stop(syscall.SIGTERM)
		if t.Failed() {
			t.Logf("--- %s log (tail) ---\n%s", name, tail(b.p.output(), 4000))
		}
	})
	return b
}

// invoke sends one raw remoting request (for admin calls the Go client lacks).
func invoke(t *testing.T, addr string, code int16, fields map[string]string, body []byte) *remoting.Command {
	t.Helper()
	cl := remoting.NewClient(remoting.ClientConfig{})
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.Invoke(ctx, addr, remoting.NewRequest(code, fields, body))
	if err != nil {
		t.Fatalf("request %d to %s: %v", code, addr, err)
	}
	return resp
}

// createTopic creates topic on b and waits until the name server routes it.
func createTopic(t *testing.T, b *brokerProc, topic string, queues int) {
	t.Helper()
	resp := invoke(t, b.addr, remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "readQueueNums": strconv.Itoa(queues), "writeQueueNums": strconv.Itoa(queues), "perm": "6",
		"topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false",
	}, nil)
	if resp.Code != remoting.Success {
		t.Fatalf("create topic %s: %d %s", topic, resp.Code, resp.Remark)
	}
	waitRoute(t, topic, true)
}

// waitRoute waits until the name server has (or no longer has) a route for topic.
func waitRoute(t *testing.T, topic string, present bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp := invoke(t, namesrvAddr, remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil)
		if (resp.Code == remoting.Success) == present {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("route of %s present=%v not seen at the name server within 10s (last code %d %s)", topic, present, resp.Code, resp.Remark)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// eventually polls cond every 20 ms for up to within.
// runs counts the runs of each test, so that runName can tell them apart.
var runs = struct {
	sync.Mutex
	byTest map[*testing.T]int
	byName map[string]int
}{byTest: map[*testing.T]int{}, byName: map[string]int{}}

// runName is base in a test's first run and base plus the run number in later ones
// (go test -count=N): the shared broker keeps the topics, messages and offsets of
// earlier runs, so tests that count from an empty queue need names of their own.
func runName(t *testing.T, base string) string {
	runs.Lock()
	defer runs.Unlock()
	n, ok := runs.byTest[t]
	if !ok {
		runs.byName[t.Name()]++
		n = runs.byName[t.Name()]
		runs.byTest[t] = n
	}
	if n == 1 {
		return base
	}
	return fmt.Sprintf("%s%d", base, n)
}

func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
