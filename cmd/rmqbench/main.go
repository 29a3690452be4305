// Command rmqbench measures a RocketMQ 4.x cluster over the real protocol, in the spirit
// of RocketMQ's benchmark Producer and Consumer (org.apache.rocketmq.example.benchmark):
//
//	rmqbench producer -n 127.0.0.1:9876 -t BenchmarkTest -w 16 -s 1024 [-a] [-d 20s] [-k] [-tags T] [-c -q 8]
//	rmqbench consumer -n 127.0.0.1:9876 -t BenchmarkTest -g benchmark_consumer [-d 20s] [-from-first]
//
// Every -i (5s) it prints a line like Java's benchmark ("Send TPS: … Max RT(ms): …
// Average RT(ms): …", "Consume TPS: … AVG(B2C) RT(ms): …"), and a summary table with
// percentiles when it stops (-d elapsed, or Ctrl-C). Unlike Java's benchmark, -a means
// asynchronous sends (Java's -a is aclEnable) and Max RT is the interval's maximum.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

func usage() {
	fmt.Fprintf(os.Stderr, `usage:
  rmqbench producer [flags]   send messages as fast as the threads go
  rmqbench consumer [flags]   pull every queue of a topic with long polling

Run "rmqbench producer -h" or "rmqbench consumer -h" for the flags.
`)
	os.Exit(2)
}

func main() { os.Exit(run()) }

func run() int {
	if len(os.Args) < 2 {
		usage()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "producer":
		err = producerMain(ctx, os.Args[2:], os.Stdout)
	case "consumer":
		err = consumerMain(ctx, os.Args[2:], os.Stdout)
	case "-h", "-help", "--help", "help":
		usage()
	default:
		fmt.Fprintf(os.Stderr, "rmqbench: unknown command %q\n", os.Args[1])
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "rmqbench:", err)
		return 1
	}
	return 0
}

func defaultNamesrv() string {
	if v := os.Getenv("NAMESRV_ADDR"); v != "" {
		return v
	}
	return fmt.Sprintf("127.0.0.1:%d", protocol.DefaultNamesrvPort)
}

func producerMain(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("rmqbench producer", flag.ExitOnError)
	o := producerOptions{}
	fs.StringVar(&o.namesrv, "n", defaultNamesrv(), "name server addresses, 'host:port;host:port' (env NAMESRV_ADDR)")
	fs.StringVar(&o.topic, "t", protocol.BenchmarkTopic, "topic")
	fs.StringVar(&o.group, "g", "benchmark_producer", "producer group")
	fs.IntVar(&o.threads, "w", 16, "sending threads")
	fs.IntVar(&o.size, "s", 1024, "message body size in bytes")
	fs.BoolVar(&o.async, "a", false, "send asynchronously, up to -inflight requests outstanding per thread")
	fs.IntVar(&o.inflight, "inflight", 64, "outstanding async sends per thread")
	fs.DurationVar(&o.duration, "d", 0, "run this long (0: until Ctrl-C)")
	fs.DurationVar(&o.interval, "i", 5*time.Second, "interval of the TPS / RT lines")
	fs.BoolVar(&o.keys, "k", false, "set a KEYS property on every message (the broker indexes it)")
	fs.StringVar(&o.tags, "tags", "", "TAGS property of every message (none when empty)")
	fs.BoolVar(&o.create, "c", false, "create (or update) the topic on every master first")
	fs.IntVar(&o.queues, "q", 8, "read/write queues per broker for -c")
	fs.DurationVar(&o.sendTimeout, "timeout", 3*time.Second, "send timeout")
	_ = fs.Parse(args) // flag.ExitOnError: a bad flag exits
	if o.threads < 1 || o.size < 1 || o.inflight < 1 || o.queues < 1 {
		return fmt.Errorf("-w, -s, -inflight and -q must be positive")
	}
	_, err := runProducer(ctx, o, out)
	return err
}

func consumerMain(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("rmqbench consumer", flag.ExitOnError)
	o := consumerOptions{}
	fs.StringVar(&o.namesrv, "n", defaultNamesrv(), "name server addresses, 'host:port;host:port' (env NAMESRV_ADDR)")
	fs.StringVar(&o.topic, "t", protocol.BenchmarkTopic, "topic")
	fs.StringVar(&o.group, "g", "benchmark_consumer", "consumer group")
	fs.DurationVar(&o.duration, "d", 0, "run this long (0: until Ctrl-C)")
	fs.DurationVar(&o.interval, "i", 5*time.Second, "interval of the TPS / RT lines")
	fs.BoolVar(&o.fromFirst, "from-first", false, "start at each queue's min offset instead of its max offset")
	fs.Int64Var(&o.count, "count", 0, "stop after this many messages (0: no limit)")
	fs.IntVar(&o.batch, "b", 32, "maxMsgNums per pull")
	fs.DurationVar(&o.suspend, "suspend", 15*time.Second, "long-polling time the broker may hold a pull")
	_ = fs.Parse(args) // flag.ExitOnError: a bad flag exits
	_, err := runConsumer(ctx, o, out)
	return err
}

func newRemoting() *remoting.Client {
	return remoting.NewClient(remoting.ClientConfig{Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
}

func splitAddrs(s string) []string {
	var out []string
	for _, a := range strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == ',' }) {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}
