// Command broker runs a RocketMQ 4.x compatible broker, like mqbroker:
//
//	broker -c broker.conf [-n 127.0.0.1:9876]
//
// broker.conf holds the Java BrokerConfig/MessageStoreConfig/NettyServerConfig keys.
// -n overrides namesrvAddr. "broker -p" prints the effective configuration and exits.
// SIGTERM or SIGINT stops it cleanly: offsets and configs are persisted, the store is
// flushed and marked clean, and the broker unregisters from its name servers.
package main

import (
	"github.com/openrmq/rocketmq-operator/pkg/properties"

	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/openrmq/rocketmq-operator/broker"
	"github.com/openrmq/rocketmq-operator/broker/config"
)

func main() {
	os.Exit(run())
}

func run() int {
	configFile := flag.String("c", "", "broker config properties file (broker.conf)")
	namesrv := flag.String("n", "", "name server addresses, 'host:port;host:port', overriding namesrvAddr")
	printCfg := flag.Bool("p", false, "print the effective configuration and exit")
	verbose := flag.Bool("v", false, "log at debug level")
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
	if *namesrv != "" {
		if _, err := cfg.Set("namesrvAddr", *namesrv); err != nil {
			fmt.Fprintln(os.Stderr, "broker: -n:", err)
			return 1
		}
		if err := cfg.Validate(); err != nil {
			fmt.Fprintln(os.Stderr, "broker: -n:", err)
			return 1
		}
	}
	if *printCfg {
		fmt.Print(properties.Format(cfg.Properties()))
		return 0
	}

	// Catch signals before announcing the boot, so a stop right after it is graceful
	// (as in cmd/namesrv).
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	b, err := broker.New(cfg, broker.Options{Logger: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, "broker:", err)
		return 1
	}
	if err := b.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "broker:", err)
		b.Shutdown(context.Background())
		return 1
	}
	fmt.Printf("The broker[%s, %s] boot success. serializeType=JSON and name server is %s\n",
		cfg.BrokerName, cfg.BrokerAddr(), cfg.NamesrvAddr)

	s := <-sig
	log.Info("shutting down", "signal", s.String())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.Shutdown(ctx); err != nil {
		log.Error("shutdown", "err", err)
		return 1
	}
	return 0
}
