// Command namesrv runs a RocketMQ 4.x compatible name server.
//
//	namesrv -c namesrv.conf [-n 0.0.0.0:9876]
//
// The config file holds Java NamesrvConfig/NettyServerConfig keys (listenPort,
// kvConfigPath, ...) and our maxBrokersPerConnection, and the tls.server.* keys, which
// tls.config.file (default /etc/rocketmq/tls.properties) overrides when it exists.
// "namesrv -p" prints the effective configuration and exits.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/openrmq/rocketmq-operator/namesrv"
	"github.com/openrmq/rocketmq-operator/pkg/health"
)

func main() {
	os.Exit(run())
}

func run() int {
	configFile := flag.String("c", "", "name server config properties file")
	listen := flag.String("n", "", "listen address host:port, overriding bindAddress and listenPort")
	printCfg := flag.Bool("p", false, "print the effective configuration and exit")
	verbose := flag.Bool("v", false, "log at debug level")
	httpAddr := flag.String("http", "", "serve /livez, /startupz, /readyz and the address list on this address (\":8080\"); empty: no HTTP")
	peers := flag.String("peers", "", "host:port whose DNS name resolves to every name server of the ensemble (a headless Service); the address list answers its IPs")
	flag.Parse()

	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	cfg := namesrv.DefaultConfig()
	if *configFile != "" {
		c, warnings, err := namesrv.LoadConfig(*configFile)
		for _, w := range warnings {
			log.Warn("config: "+w, "file", *configFile)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		cfg = c
	}
	if *listen != "" {
		host, port, err := net.SplitHostPort(*listen)
		if err == nil {
			cfg.ListenPort, err = strconv.Atoi(port)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "namesrv: -n %q: want host:port\n", *listen)
			return 1
		}
		cfg.BindAddress = host
	}
	// tls.config.file (default /etc/rocketmq/tls.properties), when it exists, over the
	// config file's tls.* keys, as Java's TlsHelper reads it.
	tlsWarnings, err := cfg.TLS.ApplyFile()
	for _, w := range tlsWarnings {
		log.Warn("config: " + w)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "namesrv:", err)
		return 1
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if *printCfg {
		fmt.Print(cfg.Properties())
		return 0
	}
	cfg.Logger = log

	// Catch signals before announcing the boot, so a stop right after it is graceful.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	ns, err := namesrv.New(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := ns.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "namesrv: listen: %v\n", err)
		return 1
	}
	// Scripts wait for this line, as they do for Java's NamesrvStartup.
	fmt.Printf("The Name Server boot success. serializeType=JSON address=%s\n", ns.Addr())
	if *httpAddr != "" {
		hs, err := health.Listen(*httpAddr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "namesrv: -http:", err)
			return 1
		}
		defer hs.Close()
		hs.Handle(addressPath, addressServer(*peers, ns.Addr(), net.DefaultResolver, log))
		hs.Started(nil) // serving: it answers routes from now on
		defer hs.Stopping()
	}

	s := <-sig
	log.Info("shutting down", "signal", s.String())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ns.Shutdown(ctx); err != nil {
		log.Warn("shutdown", "err", err)
	}
	log.Info("name server stopped")
	return 0
}
