// Command broker runs a RocketMQ 4.x compatible broker, like mqbroker:
//
//	broker -c broker.conf [-n 127.0.0.1:9876] [-brokerIP1 192.0.2.7]
//
// broker.conf holds the Java BrokerConfig/MessageStoreConfig/NettyServerConfig keys.
// -n overrides namesrvAddr and -brokerIP1 brokerIP1, for values known only when the
// process starts (under Kubernetes, $(VAR) in the command: the name servers from a
// ConfigMap, the node's IP from the downward API). "broker -p" prints the effective
// configuration and exits.
// "broker -verify-store <storePathRootDir> [-c broker.conf]" checks a stopped store's
// files without changing them, prints what is damaged, and exits 0 when it is clean, 1
// when something is damaged, 2 when it could not check (see verify.go).
//
// The tls.* keys (RocketMQ's TlsSystemConfig) come from broker.conf, then from
// tls.config.file (default /etc/rocketmq/tls.properties) when it exists; docs/tls.md.
//
// SIGTERM or SIGINT stops it cleanly: offsets and configs are persisted, the store is
// flushed and marked clean, and the broker unregisters from its name servers.
// Unless GOGC or GOMEMLIMIT is set, it runs with GOGC=400, lowered toward 100 as the
// heap grows past 64 MiB, and a soft memory limit of half the memory (see tuneGC).
// Unless GODEBUG names schedtrace, it first executes itself again with
// GODEBUG=schedtrace=2147483647, which keeps the runtime's sysmon from polling every
// 20 µs after each idle pause (see sysmon.go).
package main

import (
	"github.com/openrmq/rocketmq-operator/pkg/properties"

	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/openrmq/rocketmq-operator/broker"
	"github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/pkg/health"
)

func main() {
	if err := execWithSysmonBackoff(); err != nil {
		fmt.Fprintln(os.Stderr, "broker: running with the Go runtime's sysmon as it is:", err)
	}
	os.Exit(run())
}

func run() int {
	configFile := flag.String("c", "", "broker config properties file (broker.conf)")
	namesrv := flag.String("n", "", "name server addresses, 'host:port;host:port', overriding namesrvAddr")
	brokerIP1 := flag.String("brokerIP1", "", "the IP address announced to clients, overriding brokerIP1")
	printCfg := flag.Bool("p", false, "print the effective configuration and exit")
	verbose := flag.Bool("v", false, "log at debug level")
	verifyDir := flag.String("verify-store", "", "check the stopped store rooted at this folder, print what is damaged and exit (0 clean, 1 damaged, 2 not checked)")
	httpAddr := flag.String("http", "", "serve /livez, /startupz and /readyz on this address (\":8080\"); empty: no HTTP")
	pprofAddr := flag.String("pprof", "", "serve Go's /debug/pprof profiles on this address (\"127.0.0.1:6060\"), for benchmarks; empty: none. Profiles expose the process: keep it on loopback")
	shutdownDelay := flag.Duration("shutdown-delay", 0, "on SIGTERM, a master first answers /readyz not ready and keeps serving this long, so that load balancers stop sending it new connections before it goes")
	flag.Parse()

	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	cfg := config.Default()
	if *configFile != "" {
		c, warnings, err := config.LoadFile(*configFile)
		for _, w := range warnings {
			log.Warn("config: "+w.String(), "file", *configFile)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "broker:", err)
			return 1
		}
		cfg = c
	}
	for _, o := range []struct{ flag, key, value string }{
		{"-n", "namesrvAddr", *namesrv}, {"-brokerIP1", "brokerIP1", *brokerIP1},
	} {
		if o.value == "" {
			continue
		}
		if _, err := cfg.Set(o.key, o.value); err != nil {
			fmt.Fprintf(os.Stderr, "broker: %s: %v\n", o.flag, err)
			return 1
		}
	}
	if err := cfg.Validate(); err != nil { // the overrides; the error names the key
		fmt.Fprintln(os.Stderr, "broker:", err)
		return 1
	}
	// tls.config.file (default /etc/rocketmq/tls.properties), when it exists, over
	// broker.conf's tls.* keys, as Java's TlsHelper reads it.
	tlsWarnings, err := cfg.TLS.ApplyFile()
	for _, w := range tlsWarnings {
		log.Warn("config: " + w)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "broker:", err)
		return 1
	}
	if *printCfg {
		fmt.Print(properties.Format(cfg.Properties()))
		return 0
	}
	if *verifyDir != "" {
		return verifyStore(os.Stdout, cfg, *verifyDir, *configFile != "")
	}

	tuneGC(log)

	if *pprofAddr != "" {
		stop, err := servePprof(*pprofAddr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "broker: -pprof:", err)
			return 1
		}
		defer stop()
	}

	// The probes answer "starting" during store recovery, which may take minutes.
	var hs *health.Server
	if *httpAddr != "" {
		var err error
		if hs, err = health.Listen(*httpAddr); err != nil {
			fmt.Fprintln(os.Stderr, "broker: -http:", err)
			return 1
		}
		defer hs.Close()
	}

	// Catch signals before announcing the boot, so a stop right after it is graceful
	// (as in cmd/namesrv).
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	b, code := startBroker(cfg, log, hs)
	if b == nil {
		return code
	}
	fmt.Printf("The broker[%s, %s] boot success. serializeType=JSON and name server is %s\n",
		cfg.BrokerName, cfg.BrokerAddr(), cfg.NamesrvAddr)

	// A role change (failover) or a rejoin cut reopens the broker in this process: a clean
	// stop, then a start with the new config on the same store (broker.Reopened).
	var s os.Signal
	for s == nil {
		select {
		case s = <-sig:
		case next := <-b.Reopened():
			if hs != nil {
				hs.Started(func() error { return errReopening })
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err := b.Shutdown(ctx)
			cancel()
			if err != nil {
				log.Error("shutdown before the reopen", "err", err)
				return 1
			}
			if b, code = startBroker(&next, log, hs); b == nil {
				return code
			}
		}
	}
	log.Info("shutting down", "signal", s.String())
	if hs != nil {
		hs.Stopping()
		if *shutdownDelay > 0 && b.Config().BrokerRole != config.Slave {
			log.Info("serving, not ready, before stopping", "delay", *shutdownDelay)
			select {
			case <-time.After(*shutdownDelay):
			case <-sig: // a second signal stops at once
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.Shutdown(ctx); err != nil {
		log.Error("shutdown", "err", err)
		return 1
	}
	return 0
}

var errReopening = errors.New("reopening with a new role")

// startBroker opens and starts a broker; on failure it prints why and returns nil and
// the exit code.
func startBroker(cfg *config.Config, log *slog.Logger, hs *health.Server) (*broker.Broker, int) {
	b, err := broker.New(cfg, broker.Options{Logger: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, "broker:", err)
		return nil, 1
	}
	if err := b.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "broker:", err)
		if err := b.Shutdown(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "broker: shutdown:", err)
		}
		return nil, 1
	}
	if hs != nil {
		// Ready: registered with a name server; a slave also connected to its master.
		hs.Started(b.Ready)
	}
	return b, 0
}

// defaultGOGC: the broker's live heap is a few MiB, so Go's default GOGC=100 starts a
// GC cycle every few MiB allocated. At 400, 1 KiB sync sends cost ~14 % less
// broker CPU per message and a drain 5-12 % less, for ~20-25 MiB of memory instead of
// ~8; 800 saves a few % more for twice that (docs/benchmarks.md).
const defaultGOGC = 400

// tuneGC sets the GC defaults unless GOGC or GOMEMLIMIT is in the environment, which
// then rule as Go defines. GOGC follows the live heap (gcHeadroom): past 64 MiB the
// heap grows to twice what is live, as under Go's default, not five times. The soft
// memory limit, half the memory (the cgroup's limit or RAM), bounds it all.
func tuneGC(log *slog.Logger) {
	_, gogc := os.LookupEnv("GOGC")
	_, memlimit := os.LookupEnv("GOMEMLIMIT")
	if gogc || memlimit {
		log.Info("garbage collector as set in the environment",
			"GOGC", os.Getenv("GOGC"), "GOMEMLIMIT", os.Getenv("GOMEMLIMIT"))
		return
	}
	debug.SetGCPercent(defaultGOGC)
	mem, from := memoryAvailable()
	if mem <= 0 {
		log.Info("garbage collector", "GOGC", defaultGOGC, "GOMEMLIMIT", "none (memory size unknown)",
			"headroom", fmt.Sprintf("twice the live heap past %dMiB", headroomFloor>>20))
		go gcHeadroom{floor: headroomFloor, max: defaultGOGC}.run()
		return
	}
	debug.SetMemoryLimit(mem / 2)
	go gcHeadroom{floor: headroomFloor, max: defaultGOGC}.run()
	log.Info("garbage collector (set GOGC or GOMEMLIMIT to override)", "GOGC", defaultGOGC,
		"GOMEMLIMIT", fmt.Sprintf("%dMiB", mem/2>>20), "memory", fmt.Sprintf("%dMiB (%s)", mem>>20, from),
		"headroom", fmt.Sprintf("twice the live heap past %dMiB", headroomFloor>>20))
}

// memoryAvailable returns the memory this process may use: its cgroup's limit when
// there is one below the RAM, else the RAM; 0 when unknown.
func memoryAvailable() (int64, string) {
	ram := memTotal()
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64) // "max": no limit
		if err == nil && n > 0 && n < math.MaxInt64/2 && (ram == 0 || n < ram) {
			return n, "cgroup limit"
		}
	}
	return ram, "RAM"
}

// memTotal is MemTotal from /proc/meminfo in bytes, or 0.
func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
