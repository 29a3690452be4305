//go:build compat

package compat

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/openrmq/rocketmq-operator/test/internal/procs"
)

// Bounds for process start-up; generous because CI machines have 2 cores and compile
// other things at the same time.
const (
	namesrvStartTimeout = 90 * time.Second
	brokerStartTimeout  = 180 * time.Second
)

// fixture is the name server under test plus one Java broker registered with it, shared by
// every test in the package (a Java broker takes several seconds to boot).
type fixture struct {
	work   string // logs, stores and confs
	java   procs.Java
	ns     *procs.Namesrv
	broker *procs.JavaBroker
}

var (
	setupOnce sync.Once
	shared    *fixture
	setupErr  error
	workDir   string
)

func TestMain(m *testing.M) {
	workDir = os.Getenv("COMPAT_WORK_DIR")
	if workDir == "" {
		d, err := os.MkdirTemp("", "rocketmq-compat-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "compat:", err)
			os.Exit(2)
		}
		workDir = d
	}
	if err := os.MkdirAll(workDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "compat:", err)
		os.Exit(2)
	}
	// The Go client logs a lot at INFO; keep it in a file next to the process logs.
	rlog.SetLogLevel(envOr("ROCKETMQ_GO_LOG_LEVEL", "info"))
	_ = rlog.SetOutputPath(filepath.Join(workDir, "go-client.log"))
	fmt.Printf("compat: name server under test: %s; logs and stores under %s\n", namesrvKind(), workDir)

	code := m.Run()

	if shared != nil {
		shared.stop()
	}
	if oursShared != nil {
		oursShared.stop()
	}
	if code != 0 {
		fmt.Printf("compat: FAILED; process logs are in %s (go-client.log, namesrv*, java-broker/*, ours/broker/broker.log, ours/java-clients/*)\n", workDir)
	}
	os.Exit(code)
}

// namesrvKind is the name server under test: "ours" (default) or "java".
func namesrvKind() string {
	switch k := strings.ToLower(os.Getenv("COMPAT_NAMESRV")); k {
	case "", "ours":
		return "ours"
	default:
		return k
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// env returns the shared fixture, starting it on first use. A test calling it fails with
// the start-up error (and the process log's tail) if the fixture cannot be started.
func env(t *testing.T) *fixture {
	t.Helper()
	setupOnce.Do(func() { shared, setupErr = setup() })
	if setupErr != nil {
		t.Fatalf("starting the name server (%s) and the Java broker: %v", namesrvKind(), setupErr)
	}
	t.Cleanup(func() {
		if t.Failed() {
			shared.dumpLogs(t)
		}
	})
	return shared
}

func setup() (*fixture, error) {
	java, err := procs.JavaFromEnv()
	if err != nil {
		return nil, err
	}
	f := &fixture{work: workDir, java: java}
	start := time.Now()

	ctx, cancel := context.WithTimeout(context.Background(), namesrvStartTimeout)
	defer cancel()
	switch kind := namesrvKind(); kind {
	case "ours":
		bin := filepath.Join(envOr("COMPAT_BIN_DIR", filepath.Join("..", "..", "bin")), "namesrv")
		if _, err := os.Stat(bin); err != nil {
			return nil, fmt.Errorf("our name server binary: %w (run `make build` first, or COMPAT_NAMESRV=java)", err)
		}
		f.ns, err = procs.StartOurNamesrv(ctx, bin, filepath.Join(workDir, "namesrv"))
	case "java":
		f.ns, err = procs.StartJavaNamesrv(ctx, java, filepath.Join(workDir, "java-namesrv"))
	default:
		return nil, fmt.Errorf("COMPAT_NAMESRV=%q: want ours or java", kind)
	}
	if err != nil {
		return nil, err
	}
	fmt.Printf("compat: %s name server up at %s after %s (log %s)\n", f.ns.Kind, f.ns.Addr, time.Since(start).Round(time.Millisecond), f.ns.LogPath)

	start = time.Now()
	bctx, bcancel := context.WithTimeout(context.Background(), brokerStartTimeout)
	defer bcancel()
	f.broker, err = procs.StartJavaBroker(bctx, java, filepath.Join(workDir, "java-broker"), procs.BrokerOpts{
		Cluster:     "CompatCluster",
		Name:        "compat-broker-a",
		NamesrvAddr: f.ns.Addr,
		// Topics exist only once created, so a route the clients get proves the broker's
		// registration of that topic reached the name server (no TBW102 fallback).
		Conf: map[string]string{"autoCreateTopicEnable": "false"},
	})
	if err != nil {
		f.stop()
		return nil, err
	}
	fmt.Printf("compat: Java broker %s up at %s after %s (log %s)\n", f.broker.Name, f.broker.Addr, time.Since(start).Round(time.Millisecond), f.broker.LogPath)
	return f, nil
}

func (f *fixture) stop() {
	if f.broker != nil {
		f.broker.Stop(procs.DefaultStopGrace)
	}
	if f.ns != nil {
		f.ns.Stop(procs.DefaultStopGrace)
	}
}

func (f *fixture) dumpLogs(t *testing.T) {
	t.Helper()
	for _, p := range []*procs.Proc{f.nsProc(), f.brokerProc()} {
		if p == nil {
			continue
		}
		if exited, err := p.Exited(); exited {
			t.Logf("%s EXITED: %v", p.Name, err)
		}
		t.Logf("---- last lines of %s (%s) ----\n%s", p.Name, p.LogPath, p.Tail(30))
	}
	t.Logf("Go client log: %s", filepath.Join(f.work, "go-client.log"))
}

func (f *fixture) nsProc() *procs.Proc {
	if f.ns == nil {
		return nil
	}
	return f.ns.Proc
}

func (f *fixture) brokerProc() *procs.Proc {
	if f.broker == nil {
		return nil
	}
	return f.broker.Proc
}

// eventually calls fn every interval until it returns nil or timeout passes, and returns
// fn's last error.
func eventually(timeout, interval time.Duration, fn func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := fn()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("still failing after %s: %w", timeout, err)
		}
		time.Sleep(interval)
	}
}

// uniq returns a name that is unique for this run.
func uniq(prefix string) string {
	return fmt.Sprintf("%s_%d", prefix, time.Now().UnixNano())
}
