package procs

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The conf/ files the Java name server and broker (4.9.x) read from $ROCKETMQ_HOME.
//
//go:embed javahome
var javaHome embed.FS

// Environment variables read by JavaFromEnv (hack/compat.sh sets them).
const (
	EnvJava          = "COMPAT_JAVA"           // java executable (default: $JAVA_HOME/bin/java, then java on PATH)
	EnvJavaClasspath = "COMPAT_JAVA_CLASSPATH" // classpath with the RocketMQ jars, e.g. /cache/lib/*
	EnvJavaClasses   = "COMPAT_JAVA_CLASSES"   // directory of compiled test programs (optional)
	EnvJavaHeapMB    = "COMPAT_JAVA_HEAP_MB"   // heap for each JVM (default 512)
)

// Java says how to run the Apache RocketMQ Java programs.
type Java struct {
	Bin       string // java executable
	Classpath string // RocketMQ broker, name server and client jars (java -cp syntax)
	Classes   string // extra classpath entry for compiled test programs; may be empty
	HeapMB    int    // -Xms/-Xmx of each JVM

	// ExtraJVMArgs go after the standard options, e.g. -Drocketmq.serialize.type=ROCKETMQ
	// to make a broker or client send binary remoting headers.
	ExtraJVMArgs []string
	// Stdin is the stdin of the programs StartMain starts (nil: /dev/null).
	Stdin *os.File
}

// JavaFromEnv reads the COMPAT_JAVA* variables. The classpath is required.
func JavaFromEnv() (Java, error) {
	j := Java{
		Bin:       os.Getenv(EnvJava),
		Classpath: os.Getenv(EnvJavaClasspath),
		Classes:   os.Getenv(EnvJavaClasses),
		HeapMB:    512,
	}
	if j.Classpath == "" {
		return j, fmt.Errorf("%s is not set: run the suite through hack/compat.sh (make test-compat), which fetches the RocketMQ jars from Maven Central", EnvJavaClasspath)
	}
	if v := os.Getenv(EnvJavaHeapMB); v != "" {
		if _, err := fmt.Sscan(v, &j.HeapMB); err != nil || j.HeapMB < 64 {
			return j, fmt.Errorf("%s=%q: want a number of MiB >= 64", EnvJavaHeapMB, v)
		}
	}
	if j.Bin == "" {
		if h := os.Getenv("JAVA_HOME"); h != "" {
			j.Bin = filepath.Join(h, "bin", "java")
		} else if p, err := exec.LookPath("java"); err == nil {
			j.Bin = p
		} else {
			return j, fmt.Errorf("no java: set %s or JAVA_HOME, or put java on PATH", EnvJava)
		}
	}
	return j, nil
}

// jvmArgs are the JVM options for a RocketMQ 4.9.x process on JDK 17 whose files all live
// under dir: user.home is moved there too, since 4.9.x keeps some defaults under ~/store,
// ~/namesrv and ~/logs.
func (j Java) jvmArgs(dir, rocketmqHome string) []string {
	cp := j.Classpath
	if j.Classes != "" {
		cp = j.Classes + string(os.PathListSeparator) + cp
	}
	args := []string{
		fmt.Sprintf("-Xms%dm", j.HeapMB), fmt.Sprintf("-Xmx%dm", j.HeapMB),
		"-XX:MaxDirectMemorySize=512m",
		"-XX:-UsePerfData",
		"-XX:TieredStopAtLevel=1", // start fast on 2 cores; these JVMs live for seconds
		"-Djava.net.preferIPv4Stack=true",
		"--add-opens", "java.base/java.nio=ALL-UNNAMED",
		"--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
		"--add-exports", "java.base/jdk.internal.ref=ALL-UNNAMED",
		"-Duser.home=" + dir,
		"-Drocketmq.home.dir=" + rocketmqHome,
		"-Drocketmq.client.logRoot=" + filepath.Join(dir, "logs"),
		"-Djava.io.tmpdir=" + filepath.Join(dir, "tmp"),
		"-cp", cp,
	}
	return append(args, j.ExtraJVMArgs...)
}

// prepareJavaDir creates dir, dir/tmp and a ROCKETMQ_HOME under dir holding the embedded
// logback configs, and returns the ROCKETMQ_HOME path.
func prepareJavaDir(dir string) (string, error) {
	home := filepath.Join(dir, "rocketmq-home")
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o755); err != nil {
		return "", err
	}
	sub, err := fs.Sub(javaHome, "javahome")
	if err != nil {
		return "", err
	}
	if err := os.CopyFS(home, sub); err != nil && !os.IsExist(err) {
		return "", err
	}
	return home, nil
}

// WithJVMArgs returns a copy of j that also passes args to the JVM.
func (j Java) WithJVMArgs(args ...string) Java {
	j.ExtraJVMArgs = append(slices.Clone(j.ExtraJVMArgs), args...)
	return j
}

// WithStdin returns a copy of j whose programs read stdin from f.
func (j Java) WithStdin(f *os.File) Java {
	j.Stdin = f
	return j
}

// StartMain starts a Java main class from the RocketMQ classpath (plus j.Classes) with
// its files under dir and its output in dir/<name>.log. Use it for Java client programs.
func (j Java) StartMain(dir, name, mainClass string, args ...string) (*Proc, error) {
	home, err := prepareJavaDir(dir)
	if err != nil {
		return nil, err
	}
	argv := append(j.jvmArgs(dir, home), mainClass)
	argv = append(argv, args...)
	return Start(Spec{
		Name:    name,
		Path:    j.Bin,
		Args:    argv,
		Env:     []string{"ROCKETMQ_HOME=" + home},
		Dir:     dir,
		LogPath: filepath.Join(dir, name+".log"),
		Stdin:   j.Stdin,
	})
}

// RunMain runs a Java main class like StartMain and waits for it to exit. It returns the
// program's output (without the command line that Start logs first) and an error if it exited non-zero or ctx ended first (then it is killed).
func (j Java) RunMain(ctx context.Context, dir, name, mainClass string, args ...string) (string, error) {
	p, err := j.StartMain(dir, name, mainClass, args...)
	if err != nil {
		return "", err
	}
	select {
	case <-p.Done():
	case <-ctx.Done():
		p.Kill()
		return "", fmt.Errorf("%s (%s) did not finish: %w; log %s", name, mainClass, ctx.Err(), p.LogPath)
	}
	out := p.Log()
	if strings.HasPrefix(out, "### ") {
		if i := strings.IndexByte(out, '\n'); i >= 0 {
			out = out[i+1:]
		}
	}
	if _, err := p.Exited(); err != nil {
		return out, fmt.Errorf("%s (%s): %w; log %s", name, mainClass, err, p.LogPath)
	}
	return out, nil
}

// Namesrv is a running name server.
type Namesrv struct {
	*Proc
	Addr string // 127.0.0.1:port
	Kind string // "ours" or "java"
}

// NamesrvReadyLine is what both name servers print once listening.
const NamesrvReadyLine = "The Name Server boot success"

// StartOurNamesrv starts bin/namesrv (bin is its path) on a free loopback port with its
// files under dir, and waits until it says it booted and accepts connections.
func StartOurNamesrv(ctx context.Context, bin, dir string) (*Namesrv, error) {
	return StartOurNamesrvConf(ctx, bin, dir, nil)
}

// StartOurNamesrvConf is StartOurNamesrv with extra config keys (tls.*, say).
func StartOurNamesrvConf(ctx context.Context, bin, dir string, extra map[string]string) (*Namesrv, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	conf := filepath.Join(dir, "namesrv.conf")
	kv := map[string]string{
		"listenPort":   fmt.Sprint(port),
		"kvConfigPath": filepath.Join(dir, "kvConfig.json"),
	}
	maps.Copy(kv, extra)
	if err := writeConf(conf, kv); err != nil {
		return nil, err
	}
	p, err := Start(Spec{Name: "namesrv", Path: bin, Args: []string{"-c", conf}, Dir: dir, LogPath: filepath.Join(dir, "namesrv.log")})
	if err != nil {
		return nil, err
	}
	ns := &Namesrv{Proc: p, Addr: fmt.Sprintf("127.0.0.1:%d", port), Kind: "ours"}
	if err := waitReady(ctx, p, NamesrvReadyLine, ns.Addr); err != nil {
		p.Kill()
		return nil, err
	}
	return ns, nil
}

// StartJavaNamesrv starts the Apache RocketMQ name server (NamesrvStartup) on a free
// loopback port with its files under dir, and waits until it is ready.
func StartJavaNamesrv(ctx context.Context, j Java, dir string) (*Namesrv, error) {
	home, err := prepareJavaDir(dir)
	if err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	conf := filepath.Join(dir, "namesrv.conf")
	if err := writeConf(conf, map[string]string{
		"listenPort":      fmt.Sprint(port),
		"rocketmqHome":    home,
		"kvConfigPath":    filepath.Join(dir, "kvConfig.json"),
		"configStorePath": filepath.Join(dir, "namesrv.properties"),
	}); err != nil {
		return nil, err
	}
	argv := append(j.jvmArgs(dir, home), "org.apache.rocketmq.namesrv.NamesrvStartup", "-c", conf)
	p, err := Start(Spec{
		Name: "java-namesrv", Path: j.Bin, Args: argv, Dir: dir,
		Env:     []string{"ROCKETMQ_HOME=" + home},
		LogPath: filepath.Join(dir, "java-namesrv.log"),
	})
	if err != nil {
		return nil, err
	}
	ns := &Namesrv{Proc: p, Addr: fmt.Sprintf("127.0.0.1:%d", port), Kind: "java"}
	if err := waitReady(ctx, p, NamesrvReadyLine, ns.Addr); err != nil {
		p.Kill()
		return nil, err
	}
	return ns, nil
}

// BrokerOpts configures a Java broker.
type BrokerOpts struct {
	Cluster     string            // brokerClusterName (default DefaultCluster)
	Name        string            // brokerName (default broker-a)
	NamesrvAddr string            // required
	Conf        map[string]string // extra broker.conf keys; override the defaults
}

// JavaBroker is a running Apache RocketMQ broker.
type JavaBroker struct {
	*Proc
	Addr     string // 127.0.0.1:listenPort
	Port     int    // listenPort; the fast channel is Port-2 and HA Port+1
	Cluster  string
	Name     string
	ConfPath string
}

// StartJavaBroker starts the Apache RocketMQ broker (BrokerStartup) on free loopback ports
// with its store under dir, and waits until it has booted and accepts connections.
func StartJavaBroker(ctx context.Context, j Java, dir string, o BrokerOpts) (*JavaBroker, error) {
	if o.NamesrvAddr == "" {
		return nil, fmt.Errorf("procs: StartJavaBroker: no name server address")
	}
	if o.Cluster == "" {
		o.Cluster = "DefaultCluster"
	}
	if o.Name == "" {
		o.Name = "broker-a"
	}
	home, err := prepareJavaDir(dir)
	if err != nil {
		return nil, err
	}
	port, err := FreePortWith(-2, +1) // 4.9.x: fast channel listenPort-2, HA listenPort+1
	if err != nil {
		return nil, err
	}
	store := filepath.Join(dir, "store")
	conf := map[string]string{
		"brokerClusterName":           o.Cluster,
		"brokerName":                  o.Name,
		"brokerId":                    "0",
		"namesrvAddr":                 o.NamesrvAddr,
		"listenPort":                  fmt.Sprint(port),
		"brokerIP1":                   "127.0.0.1",
		"brokerIP2":                   "127.0.0.1",
		"rocketmqHome":                home,
		"storePathRootDir":            store,
		"storePathCommitLog":          filepath.Join(store, "commitlog"),
		"mappedFileSizeCommitLog":     fmt.Sprint(64 << 20),
		"registerNameServerPeriod":    "10000",
		"waitTimeMillsInSendQueue":    "3000", // a loaded 2-core CI machine must not answer "broker busy"
		"osPageCacheBusyTimeOutMills": "5000",
		"autoCreateTopicEnable":       "true",
		"flushDiskType":               "ASYNC_FLUSH",
	}
	maps.Copy(conf, o.Conf)
	confPath := filepath.Join(dir, "broker.conf")
	if err := writeConf(confPath, conf); err != nil {
		return nil, err
	}
	argv := append(j.jvmArgs(dir, home), "org.apache.rocketmq.broker.BrokerStartup", "-c", confPath)
	p, err := Start(Spec{
		Name: "java-broker", Path: j.Bin, Args: argv, Dir: dir,
		Env:     []string{"ROCKETMQ_HOME=" + home},
		LogPath: filepath.Join(dir, "java-broker.log"),
	})
	if err != nil {
		return nil, err
	}
	b := &JavaBroker{Proc: p, Addr: fmt.Sprintf("127.0.0.1:%d", port), Port: port, Cluster: o.Cluster, Name: o.Name, ConfPath: confPath}
	if err := waitReady(ctx, p, "boot success", b.Addr); err != nil {
		p.Kill()
		return nil, err
	}
	return b, nil
}

func waitReady(ctx context.Context, p *Proc, line, addr string) error {
	if err := p.WaitForLog(ctx, line); err != nil {
		return err
	}
	return p.WaitForTCP(ctx, addr)
}

// writeConf writes a Java properties file, keys sorted.
func writeConf(path string, kv map[string]string) error {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		fmt.Fprintf(&b, "%s=%s\n", k, kv[k])
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// DefaultStopGrace is how long Stop waits after SIGTERM: the Java broker flushes and
// unmaps its store on shutdown.
const DefaultStopGrace = 15 * time.Second
