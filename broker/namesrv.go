package broker

import (
	"context"
	"hash/crc32"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// registrationBody is the REGISTER_BROKER body: the topic table, with every topic's perm
// narrowed to the broker's when the broker is not writable (as Java does).
func (b *Broker) registrationBody(c config.Config) ([]byte, error) {
	wrapper := b.topics.Snapshot()
	if !protocol.IsWriteable(c.BrokerPermission) || !protocol.IsReadable(c.BrokerPermission) {
		for _, tc := range wrapper.TopicConfigTable {
			tc.Perm &= c.BrokerPermission
		}
	}
	body := protocol.RegisterBrokerBody{TopicConfigSerializeWrapper: wrapper, FilterServerList: []string{}}
	return body.Encode(false)
}

func (b *Broker) haServerAddr(c config.Config) string {
	ip := c.BrokerIP2
	if ip == "" {
		ip = c.BrokerIP1
	}
	return net.JoinHostPort(ip, strconv.Itoa(c.HAPort()))
}

// registerAll registers with every name server in parallel.
func (b *Broker) registerAll() {
	c := b.cfg.Get()
	addrs := config.NamesrvList(c.NamesrvAddr)
	if len(addrs) == 0 {
		return
	}
	body, err := b.registrationBody(c)
	if err != nil {
		b.log.Error("cannot encode the registration body", "err", err)
		return
	}
	hdr := protocol.RegisterBrokerRequestHeader{
		BrokerName: c.BrokerName, BrokerAddr: c.BrokerAddr(), ClusterName: c.BrokerClusterName,
		HaServerAddr: b.haServerAddr(c), BrokerID: c.BrokerID,
		BodyCrc32: int32(crc32.ChecksumIEEE(body) & 0x7FFFFFFF),
	}
	timeout := c.RegisterBrokerTimeout
	var wg sync.WaitGroup
	for _, addr := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			req := remoting.NewRequest(remoting.RegisterBroker, remoting.EncodeHeader(&hdr), body)
			resp, err := b.nsClient.Invoke(ctx, addr, req)
			switch {
			case err != nil:
				b.log.Warn("register broker failed", "namesrv", addr, "err", err)
			case resp.Code != remoting.Success:
				b.log.Warn("register broker refused", "namesrv", addr, "code", resp.Code, "remark", resp.Remark)
			default:
				b.log.Debug("registered with name server", "namesrv", addr)
				b.onRegistered(resp)
			}
			b.metrics.registration(addr, err == nil && resp.Code == remoting.Success)
		}()
	}
	wg.Wait()
}

// unregisterAll tells every name server the broker is leaving.
func (b *Broker) unregisterAll(ctx context.Context) {
	c := b.cfg.Get()
	hdr := protocol.UnregisterBrokerRequestHeader{
		BrokerName: c.BrokerName, BrokerAddr: c.BrokerAddr(), ClusterName: c.BrokerClusterName, BrokerID: c.BrokerID,
	}
	var wg sync.WaitGroup
	for _, addr := range config.NamesrvList(c.NamesrvAddr) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			req := remoting.NewRequest(remoting.UnregisterBroker, remoting.EncodeHeader(&hdr), nil)
			if _, err := b.nsClient.Invoke(ctx, addr, req); err != nil {
				b.log.Warn("unregister broker failed", "namesrv", addr, "err", err)
			}
		}()
	}
	wg.Wait()
}
