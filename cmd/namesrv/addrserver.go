package main

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"
)

// addressPath is where RocketMQ's clients look for the name-server address server: the
// Java client GETs http://<rocketmq.namesrv.domain>:8080/rocketmq/<subgroup, "nsaddr">,
// the Go client whatever URL primitive.NewHttpResolver was given.
const addressPath = "/rocketmq/nsaddr"

// addressServer answers the ensemble's name servers as "ip:port;ip:port", the body the
// clients split on ';'. peers is a host:port whose name resolves to every name server (the
// headless Service of a StatefulSet); it is resolved at each request, so the answer follows
// pods that move. Without peers, or when the name resolves to nothing, the answer is self.
func addressServer(peers, self string, r hostResolver, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ctx, cancel := context.WithTimeout(req.Context(), 2*time.Second)
		defer cancel()
		addrs, err := resolvePeers(ctx, r, peers)
		if err != nil {
			log.Warn("address server: cannot resolve the peers; answering this name server only", "peers", peers, "err", err)
		}
		if len(addrs) == 0 {
			addrs = []string{self}
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte(strings.Join(addrs, ";")))
	})
}

type hostResolver interface {
	LookupHost(ctx context.Context, host string) ([]string, error)
}

// resolvePeers turns host:port into every ip:port the host resolves to, sorted.
func resolvePeers(ctx context.Context, r hostResolver, peers string) ([]string, error) {
	if peers == "" {
		return nil, nil
	}
	host, port, err := net.SplitHostPort(peers)
	if err != nil {
		return nil, err
	}
	ips, err := r.LookupHost(ctx, host)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(ips))
	for _, ip := range ips {
		out = append(out, net.JoinHostPort(ip, port))
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
