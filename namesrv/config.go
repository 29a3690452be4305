package namesrv

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/metrics"
	"github.com/openrmq/rocketmq-operator/pkg/properties"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
	"github.com/openrmq/rocketmq-operator/pkg/tlsconfig"
)

// Config configures a NameServer. Keys in a config file are Java's NamesrvConfig and
// NettyServerConfig field names; see configKeys.
type Config struct {
	RocketmqHome    string
	KVConfigPath    string // KV config store; its .tmp and .bak live beside it
	ConfigStorePath string // accepted for compatibility; not written
	ProductEnvName  string
	ClusterTest     bool
	// OrderMessageEnable makes routes carry orderTopicConf from the ORDER_TOPIC_CONFIG
	// namespace. Off by default, as in Java: a Java producer that sees orderTopicConf
	// builds the topic's queues from it instead of from queueDatas.
	OrderMessageEnable bool

	BindAddress         string // "" or 0.0.0.0 listens on every interface
	ListenPort          int    // 0 picks a free port (tests)
	ServerWorkerThreads int

	ScanNotActiveBrokerInterval time.Duration // how often silent brokers are looked for
	BrokerChannelExpiredTime    time.Duration // silence after which a broker is dropped
	// MaxBrokersPerConnection caps the distinct broker addresses one connection may have
	// registered at a time; further ones are refused. A broker process registers its own
	// address over its own connection, a 5.x broker container one address per broker it
	// hosts; the cap keeps one client from filling the table. Ours, not a Java key; an
	// update applies to the next registration and evicts nothing.
	MaxBrokersPerConnection int

	// Connection limits of the remoting server (pkg/remoting.ServerConfig), keys in
	// brackets; the defaults do not bother real clients.
	ServerChannelMaxIdleTime          time.Duration // [serverChannelMaxIdleTimeSeconds] close a connection silent so long; 0 never (as Java)
	ServerFrameReadTimeout            time.Duration // [serverFrameReadTimeoutMillis] close one whose frame is not whole so long after its first byte
	ServerMaxConnections              int           // [serverMaxConnections] open connections
	ServerMaxConnectionsPerAddress    int           // [serverMaxConnectionsPerAddress] open connections from one IP address
	ServerMaxQueuedBytesPerConnection int64         // [serverMaxQueuedBytesPerConnection] queued for a peer that does not read before it is closed
	ServerMaxQueuedBytesTotal         int64         // [serverMaxQueuedBytesTotal] all connections; 0: 256 MiB, or a quarter of GOMEMLIMIT when lower

	// Metrics: the broker's keys (RocketMQ 5's); docs/metrics.md.
	MetricsExporterType     string // [metricsExporterType] PROM serves /metrics; DISABLE (the default) nothing
	MetricsPromExporterPort int    // [metricsPromExporterPort] 5557; 0 picks a free port (tests)
	MetricsPromExporterHost string // [metricsPromExporterHost] the address /metrics binds; "" every interface
	MetricsLabel            string // [metricsLabel] constant labels on every series, "k1:v1,k2:v2"
	// TLS holds the tls.* keys of Java's TlsSystemConfig (package pkg/tlsconfig); a name
	// server uses tls.server.* (mode, certificate, client authentication). Java reads
	// them from system properties or tls.config.file; here the config file takes them
	// too, and tls.config.file's values win, as Java's do.
	TLS tlsconfig.Settings

	Logger *slog.Logger // [slog.Default()]
}

// DefaultConfig returns the defaults of Java's name server.
func DefaultConfig() Config {
	home, _ := os.UserHomeDir()
	return Config{
		RocketmqHome:                os.Getenv("ROCKETMQ_HOME"),
		KVConfigPath:                filepath.Join(home, "namesrv", "kvConfig.json"),
		ConfigStorePath:             filepath.Join(home, "namesrv", "namesrv.properties"),
		ProductEnvName:              "center",
		ListenPort:                  9876,
		ServerWorkerThreads:         8,
		ScanNotActiveBrokerInterval: 5 * time.Second,
		BrokerChannelExpiredTime:    120 * time.Second,
		MaxBrokersPerConnection:     128,

		ServerChannelMaxIdleTime:          remoting.DefaultIdleTimeout,
		ServerFrameReadTimeout:            remoting.DefaultFrameTimeout,
		ServerMaxConnections:              remoting.DefaultMaxConnections,
		ServerMaxConnectionsPerAddress:    remoting.DefaultMaxConnectionsPerAddress,
		ServerMaxQueuedBytesPerConnection: remoting.DefaultMaxQueuedBytesPerConnection,

		MetricsExporterType:     metrics.ExporterDisable,
		MetricsPromExporterPort: metrics.DefaultPort,
		TLS:                     tlsconfig.Default(),
	}
}

// Validate reports the first unusable setting, naming its key.
func (c *Config) Validate() error {
	switch {
	case c.ListenPort < 0 || c.ListenPort > 65535:
		return fmt.Errorf("namesrv: listenPort %d out of range 0-65535", c.ListenPort)
	case c.KVConfigPath == "":
		return fmt.Errorf("namesrv: kvConfigPath is empty")
	case c.ServerWorkerThreads <= 0:
		return fmt.Errorf("namesrv: serverWorkerThreads must be positive, got %d", c.ServerWorkerThreads)
	case c.ScanNotActiveBrokerInterval <= 0:
		return fmt.Errorf("namesrv: scanNotActiveBrokerInterval must be positive, got %v", c.ScanNotActiveBrokerInterval)
	case c.BrokerChannelExpiredTime <= 0:
		return fmt.Errorf("namesrv: brokerChannelExpiredTime must be positive, got %v", c.BrokerChannelExpiredTime)
	case c.MaxBrokersPerConnection <= 0:
		return fmt.Errorf("namesrv: maxBrokersPerConnection must be positive, got %d", c.MaxBrokersPerConnection)
	case c.ServerChannelMaxIdleTime < 0:
		return fmt.Errorf("namesrv: serverChannelMaxIdleTimeSeconds must be >= 0 (0: never close idle connections), got %v", c.ServerChannelMaxIdleTime)
	case c.ServerFrameReadTimeout <= 0:
		return fmt.Errorf("namesrv: serverFrameReadTimeoutMillis must be positive, got %v", c.ServerFrameReadTimeout)
	case c.ServerMaxConnections <= 0:
		return fmt.Errorf("namesrv: serverMaxConnections must be positive, got %d", c.ServerMaxConnections)
	case c.ServerMaxConnectionsPerAddress <= 0 || c.ServerMaxConnectionsPerAddress > c.ServerMaxConnections:
		return fmt.Errorf("namesrv: serverMaxConnectionsPerAddress must be in 1..serverMaxConnections, got %d", c.ServerMaxConnectionsPerAddress)
	case c.ServerMaxQueuedBytesPerConnection <= 0:
		return fmt.Errorf("namesrv: serverMaxQueuedBytesPerConnection must be positive, got %d", c.ServerMaxQueuedBytesPerConnection)
	case c.ServerMaxQueuedBytesTotal < 0 || c.ServerMaxQueuedBytesTotal > 0 && c.ServerMaxQueuedBytesTotal < c.ServerMaxQueuedBytesPerConnection:
		return fmt.Errorf("namesrv: serverMaxQueuedBytesTotal must be 0 (automatic) or at least serverMaxQueuedBytesPerConnection, got %d", c.ServerMaxQueuedBytesTotal)
	case c.MetricsPromExporterPort < 0 || c.MetricsPromExporterPort > 65535:
		return fmt.Errorf("namesrv: metricsPromExporterPort %d out of range 0-65535", c.MetricsPromExporterPort)
	}
	if err := metrics.CheckExporterType(c.MetricsExporterType); err != nil {
		return fmt.Errorf("namesrv: metricsExporterType=%s: %w", c.MetricsExporterType, err)
	}
	if _, err := metrics.ParseLabels(c.MetricsLabel); err != nil {
		return fmt.Errorf("namesrv: metricsLabel=%s: %w", c.MetricsLabel, err)
	}
	if err := c.TLS.Validate(); err != nil {
		return fmt.Errorf("namesrv: %w", err)
	}
	return nil
}

// remotingConfig maps the server* connection limits onto a remoting.ServerConfig.
func (c *Config) remotingConfig() remoting.ServerConfig {
	return remoting.ServerConfig{
		IdleTimeout:                 remoting.IdleTimeoutFromConf(c.ServerChannelMaxIdleTime),
		FrameTimeout:                c.ServerFrameReadTimeout,
		MaxConnections:              c.ServerMaxConnections,
		MaxConnectionsPerAddress:    c.ServerMaxConnectionsPerAddress,
		MaxQueuedBytesPerConnection: c.ServerMaxQueuedBytesPerConnection,
		MaxQueuedBytesTotal:         c.ServerMaxQueuedBytesTotal,
	}
}

type setter func(c *Config, v string) error

func str(f func(*Config) *string) setter {
	return func(c *Config, v string) error { *f(c) = v; return nil }
}

func integer(f func(*Config) *int) setter {
	return func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("not an integer: %q", v)
		}
		*f(c) = n
		return nil
	}
}

func integer64(f func(*Config) *int64) setter {
	return func(c *Config, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("not an integer: %q", v)
		}
		*f(c) = n
		return nil
	}
}

func boolean(f func(*Config) *bool) setter {
	return func(c *Config, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("not a boolean: %q", v)
		}
		*f(c) = b
		return nil
	}
}

// millis reads milliseconds, as Java does, or a Go duration such as "5s".
func millis(f func(*Config) *time.Duration) setter {
	return func(c *Config, v string) error {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			*f(c) = time.Duration(n) * time.Millisecond
			return nil
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("not milliseconds or a duration: %q", v)
		}
		*f(c) = d
		return nil
	}
}

// seconds reads whole seconds, as Java's serverChannelMaxIdleTimeSeconds.
func seconds(f func(*Config) *time.Duration) setter {
	return func(c *Config, v string) error {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return fmt.Errorf("not whole seconds: %q", v)
		}
		*f(c) = time.Duration(n) * time.Second
		return nil
	}
}

func ignored(*Config, string) error { return nil }

// configKeys maps every accepted key to its setter. Netty tuning keys are accepted and
// ignored: the Go runtime has no equivalent knobs. maxBrokersPerConnection is ours. The
// tls.* keys are added by init.
var configKeys = map[string]setter{
	"rocketmqHome":                str(func(c *Config) *string { return &c.RocketmqHome }),
	"kvConfigPath":                str(func(c *Config) *string { return &c.KVConfigPath }),
	"configStorePath":             str(func(c *Config) *string { return &c.ConfigStorePath }),
	"productEnvName":              str(func(c *Config) *string { return &c.ProductEnvName }),
	"clusterTest":                 boolean(func(c *Config) *bool { return &c.ClusterTest }),
	"orderMessageEnable":          boolean(func(c *Config) *bool { return &c.OrderMessageEnable }),
	"bindAddress":                 str(func(c *Config) *string { return &c.BindAddress }),
	"listenPort":                  integer(func(c *Config) *int { return &c.ListenPort }),
	"serverWorkerThreads":         integer(func(c *Config) *int { return &c.ServerWorkerThreads }),
	"scanNotActiveBrokerInterval": millis(func(c *Config) *time.Duration { return &c.ScanNotActiveBrokerInterval }),
	"brokerChannelExpiredTime":    millis(func(c *Config) *time.Duration { return &c.BrokerChannelExpiredTime }),
	"maxBrokersPerConnection":     integer(func(c *Config) *int { return &c.MaxBrokersPerConnection }),

	"serverChannelMaxIdleTimeSeconds":   seconds(func(c *Config) *time.Duration { return &c.ServerChannelMaxIdleTime }),
	"serverFrameReadTimeoutMillis":      millis(func(c *Config) *time.Duration { return &c.ServerFrameReadTimeout }),
	"serverMaxConnections":              integer(func(c *Config) *int { return &c.ServerMaxConnections }),
	"serverMaxConnectionsPerAddress":    integer(func(c *Config) *int { return &c.ServerMaxConnectionsPerAddress }),
	"serverMaxQueuedBytesPerConnection": integer64(func(c *Config) *int64 { return &c.ServerMaxQueuedBytesPerConnection }),
	"serverMaxQueuedBytesTotal":         integer64(func(c *Config) *int64 { return &c.ServerMaxQueuedBytesTotal }),

	"metricsExporterType":     str(func(c *Config) *string { return &c.MetricsExporterType }),
	"metricsPromExporterPort": integer(func(c *Config) *int { return &c.MetricsPromExporterPort }),
	"metricsPromExporterHost": str(func(c *Config) *string { return &c.MetricsPromExporterHost }),
	"metricsLabel":            str(func(c *Config) *string { return &c.MetricsLabel }),

	"serverCallbackExecutorThreads":      ignored,
	"serverSelectorThreads":              ignored,
	"serverOnewaySemaphoreValue":         ignored,
	"serverAsyncSemaphoreValue":          ignored,
	"serverSocketSndBufSize":             ignored,
	"serverSocketRcvBufSize":             ignored,
	"writeBufferHighWaterMark":           ignored,
	"writeBufferLowWaterMark":            ignored,
	"serverSocketBacklog":                ignored,
	"serverPooledByteBufAllocatorEnable": ignored,
	"useEpollNativeSelector":             ignored,
	"defaultThreadPoolNums":              ignored,
	"clientRequestThreadPoolNums":        ignored,
}

func init() {
	for _, name := range tlsconfig.KeyNames() {
		configKeys[name] = func(c *Config, v string) error {
			_, err := c.TLS.Set(name, v)
			return err
		}
	}
}

// Set applies one key. An unknown key or a bad value is an error naming the key.
func (c *Config) Set(key, value string) error {
	s, ok := configKeys[key]
	if !ok {
		return fmt.Errorf("namesrv: unknown config key %q", key)
	}
	if err := s(c, strings.TrimSpace(value)); err != nil {
		return fmt.Errorf("namesrv: config key %s: %w", key, err)
	}
	return nil
}

// LoadConfig reads a Java properties file over DefaultConfig. Unknown keys are returned
// as warnings; a bad value or an invalid result is an error naming the key.
func LoadConfig(path string) (Config, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return Config{}, nil, fmt.Errorf("namesrv: config file: %w", err)
	}
	defer f.Close()
	cfg := DefaultConfig()
	warnings, err := cfg.ReadProperties(f)
	if err != nil {
		return Config{}, warnings, fmt.Errorf("%w (in %s)", err, path)
	}
	return cfg, warnings, cfg.Validate()
}

// ReadProperties applies a Java properties text. It returns one warning per unknown key.
func (c *Config) ReadProperties(r io.Reader) ([]string, error) {
	props, err := properties.Parse(r)
	if err != nil {
		return nil, fmt.Errorf("namesrv: config: %w", err)
	}
	var warnings []string
	for _, p := range props {
		if _, ok := configKeys[p.Key]; !ok {
			warnings = append(warnings, fmt.Sprintf("line %d: unknown config key %q ignored", p.Line, p.Key))
			continue
		}
		if err := c.Set(p.Key, p.Value); err != nil {
			return warnings, fmt.Errorf("%w (line %d)", err, p.Line)
		}
	}
	return warnings, nil
}

// Properties renders the effective settings as key=value lines, sorted by key: the form
// of `namesrv -p` and of GET_NAMESRV_CONFIG's body.
func (c *Config) Properties() string {
	kv := map[string]string{
		"rocketmqHome":                c.RocketmqHome,
		"kvConfigPath":                c.KVConfigPath,
		"configStorePath":             c.ConfigStorePath,
		"productEnvName":              c.ProductEnvName,
		"clusterTest":                 strconv.FormatBool(c.ClusterTest),
		"orderMessageEnable":          strconv.FormatBool(c.OrderMessageEnable),
		"bindAddress":                 c.BindAddress,
		"listenPort":                  strconv.Itoa(c.ListenPort),
		"serverWorkerThreads":         strconv.Itoa(c.ServerWorkerThreads),
		"scanNotActiveBrokerInterval": strconv.FormatInt(c.ScanNotActiveBrokerInterval.Milliseconds(), 10),
		"brokerChannelExpiredTime":    strconv.FormatInt(c.BrokerChannelExpiredTime.Milliseconds(), 10),
		"maxBrokersPerConnection":     strconv.Itoa(c.MaxBrokersPerConnection),

		"serverChannelMaxIdleTimeSeconds":   strconv.FormatInt(int64(c.ServerChannelMaxIdleTime/time.Second), 10),
		"serverFrameReadTimeoutMillis":      strconv.FormatInt(c.ServerFrameReadTimeout.Milliseconds(), 10),
		"serverMaxConnections":              strconv.Itoa(c.ServerMaxConnections),
		"serverMaxConnectionsPerAddress":    strconv.Itoa(c.ServerMaxConnectionsPerAddress),
		"serverMaxQueuedBytesPerConnection": strconv.FormatInt(c.ServerMaxQueuedBytesPerConnection, 10),
		"serverMaxQueuedBytesTotal":         strconv.FormatInt(c.ServerMaxQueuedBytesTotal, 10),

		"metricsExporterType":     c.MetricsExporterType,
		"metricsPromExporterPort": strconv.Itoa(c.MetricsPromExporterPort),
		"metricsPromExporterHost": c.MetricsPromExporterHost,
		"metricsLabel":            c.MetricsLabel,
	}
	for k, v := range c.TLS.Properties() { // passwords masked
		kv[k] = v
	}
	return properties.Format(kv)
}

// Keys returns the accepted config keys, sorted.
func Keys() []string {
	keys := make([]string, 0, len(configKeys))
	for k := range configKeys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
