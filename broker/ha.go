package broker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/broker/ha"
	"github.com/openrmq/rocketmq-operator/broker/metadata"
	"github.com/openrmq/rocketmq-operator/broker/schedule"
	"github.com/openrmq/rocketmq-operator/pkg/message"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// Master/slave replication (package broker/ha), as 4.9.7 wires it:
//
//   - a master (ASYNC_MASTER, SYNC_MASTER) serves its commitlog on listenPort+1 and
//     announces that port as haServerAddr; a SYNC_MASTER answers a send only once a
//     slave has it (SLAVE_NOT_AVAILABLE / FLUSH_SLAVE_TIMEOUT otherwise; the message
//     is stored either way);
//   - a SLAVE refuses writes, copies the commitlog from haMasterAddress or the
//     haServerAddr of the name server's REGISTER_BROKER answer, copies the master's
//     topics, consumer offsets, delay offsets and groups every
//     slaveSynchronizeInterval, and serves pulls from its own store.

// setupHA creates the HA parts of the role; st is the on-disk store.
func (b *Broker) setupHA(c *config.Config, st ha.MasterStore) {
	log := b.log
	switch c.BrokerRole {
	case config.AsyncMaster, config.SyncMaster:
		port := c.HAPort()
		if b.opts.NoFastChannel {
			port = 0 // tests on random ports: any free port (see HAAddr)
		}
		b.haServer = ha.NewServer(st, ha.ServerConfig{
			ListenAddr:           net.JoinHostPort("", strconv.Itoa(port)),
			SegmentSize:          int64(c.MappedFileSizeCommitLog),
			HeartbeatInterval:    c.HaSendHeartbeatInterval,
			HousekeepingInterval: c.HaHousekeepingInterval,
			TransferBatchSize:    c.HaTransferBatchSize,
			SlaveFallbehindMax:   c.HaSlaveFallbehindMax,
			TLS:                  b.tlsServer.RemotingTLS(),
			Logger:               log,
		})
	case config.Slave:
		ss, ok := st.(ha.SlaveStore)
		if !ok {
			return
		}
		b.haClient = ha.NewClient(ss, ha.ClientConfig{
			MasterAddr:           c.HaMasterAddress,
			HeartbeatInterval:    c.HaSendHeartbeatInterval,
			HousekeepingInterval: c.HaHousekeepingInterval,
			TLS:                  b.tlsClient.Config(),
			BeforeSession:        b.checkMaster,
			Logger:               log,
		})
		b.haSync = ha.NewSynchronizer(b.nsClient, metadataApplier{b}, ha.SyncConfig{
			Interval:     c.SlaveSynchronizeInterval,
			InitialDelay: min(3*time.Second, c.SlaveSynchronizeInterval),
			SelfAddr:     c.BrokerAddr(),
			VIPChannel:   !b.opts.NoFastChannel,
			Logger:       log,
		})
		if addr := metadataAddrOfHA(c.HaMasterAddress); addr != "" {
			b.haSync.SetMasterAddr(addr)
		}
	}
}

// metadataAddrOfHA is the master's remoting address when haMasterAddress names its HA
// port: the same host, one port lower (4.9.7 puts the HA port at listenPort+1). A slave
// given its master by a stable name (the operator's pod DNS names) then follows a master
// that restarted with a new IP at the next connection, for metadata as for the commitlog,
// instead of waiting for the name server's next answer. "" when haMasterAddress is unset
// or unusable.
func metadataAddrOfHA(haAddr string) string {
	host, port, err := net.SplitHostPort(haAddr)
	if err != nil || host == "" {
		return ""
	}
	p, err := strconv.Atoi(port)
	if err != nil || p <= 1 {
		return ""
	}
	return net.JoinHostPort(host, strconv.Itoa(p-1))
}

// startHA starts what setupHA created.
func (b *Broker) startHA() error {
	if b.haServer != nil {
		if err := b.haServer.Start(); err != nil {
			return fmt.Errorf("broker: HA server: %w", err)
		}
	}
	if b.haClient != nil {
		b.haClient.Start()
	}
	if b.haSync != nil {
		b.haSync.Start()
	}
	return nil
}

// closeHA stops replication; before the store closes.
func (b *Broker) closeHA() {
	if b.haSync != nil {
		b.haSync.Close()
	}
	if b.haClient != nil {
		b.haClient.Close()
	}
	if b.haServer != nil {
		b.haServer.Close()
	}
}

// HAAddr is the address the HA server listens on; "" when the broker is no master.
func (b *Broker) HAAddr() string {
	if b.haServer == nil || b.haServer.Addr() == nil {
		return ""
	}
	return b.haServer.Addr().String()
}

func (b *Broker) isSlave() bool { return b.cfg.Get().BrokerRole == config.Slave }

// notifyHA wakes the slaves' writers after an append.
func (b *Broker) notifyHA() {
	if b.haServer != nil {
		b.haServer.Notify()
	}
}

// onRegistered applies a name server's REGISTER_BROKER answer: a slave follows the
// master it names (4.9.7: the HA address only when haMasterAddress is not set and
// the answer has one; the metadata master always, except here when haMasterAddress
// names the master: see metadataAddrOfHA).
func (b *Broker) onRegistered(resp *remoting.Command) {
	if b.haSync == nil && b.haClient == nil {
		return
	}
	var h protocol.RegisterBrokerResponseHeader
	if err := remoting.DecodeHeader(resp, &h); err != nil {
		return
	}
	if b.haClient != nil && b.cfg.Get().HaMasterAddress == "" && h.HaServerAddr != "" {
		b.haClient.SetMasterAddr(h.HaServerAddr)
	}
	if b.haSync != nil && metadataAddrOfHA(b.cfg.Get().HaMasterAddress) == "" {
		b.haSync.SetMasterAddr(h.MasterAddr)
	}
}

// syncMasterWait reports whether a send must wait for a slave: a SYNC_MASTER, unless
// the message says WAIT=false (Java's isWaitStoreMsgOK).
func (b *Broker) syncMasterWait(c *config.Config, props string) bool {
	if c.BrokerRole != config.SyncMaster || b.haServer == nil {
		return false
	}
	v, ok := message.LookupProperty(props, message.PropertyWaitStoreMsgOK)
	return !ok || v != "false"
}

// waitSlave waits for a slave to acknowledge end and sets resp's code as 4.9.7's
// handlePutMessageResult does for SLAVE_NOT_AVAILABLE and FLUSH_SLAVE_TIMEOUT.
func (b *Broker) waitSlave(ctx context.Context, end int64, resp *remoting.Command) {
	err := b.haServer.WaitForSlave(ctx, end)
	switch {
	case err == nil:
		return
	case errors.Is(err, ha.ErrSlaveNotAvailable) && b.cfg.Get().SyncMasterAcksAlone:
		return // no slave to wait for: acknowledged alone (a group after a failover)
	case errors.Is(err, ha.ErrSlaveNotAvailable):
		resp.Code, resp.Remark = remoting.SlaveNotAvailable, "slave not available"
	case errors.Is(err, ha.ErrSlaveTimeout):
		resp.Code, resp.Remark = remoting.FlushSlaveTimeout, "flush slave timeout"
	default:
		resp.Code, resp.Remark = remoting.ServiceNotAvailable, "the broker is shutting down"
	}
	// A client sees only the code; the log says where replication stood. At most a line a
	// second: without a slave every send of a SYNC_MASTER lands here.
	now, last := time.Now().UnixNano(), b.slaveWaitLogged.Load()
	if now-last >= int64(time.Second) && b.slaveWaitLogged.CompareAndSwap(last, now) {
		b.log.Warn("send answered without a slave's acknowledgement", "code", resp.Code, "err", err,
			"end", end, "slaveAck", b.haServer.SlaveAckOffset(), "slaves", b.haServer.Connections())
	}
}

func (b *Broker) handleGetAllDelayOffset(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	resp := req.NewResponse(remoting.Success, "")
	if b.sched != nil {
		resp.Body = b.sched.Encode()
	}
	return resp, nil
}

// metadataApplier applies a master's metadata to a slave (4.9.7's SlaveSynchronize):
// topics are replaced, consumer offsets and groups merged, delay offsets written to
// delayOffset.json (read by the schedule service when the broker starts as a master).
type metadataApplier struct{ b *Broker }

func (a metadataApplier) ApplyTopicConfig(body []byte) error {
	var w protocol.TopicConfigSerializeWrapper
	if err := protocol.Decode(body, &w); err != nil {
		return err
	}
	var errs []error
	for _, tc := range w.TopicConfigTable {
		if tc == nil {
			continue
		}
		if old, ok := a.b.topics.Get(tc.TopicName); ok && old == *tc {
			continue
		}
		if err := a.b.topics.Put(*tc); err != nil {
			errs = append(errs, fmt.Errorf("topic %s: %w", tc.TopicName, err))
		}
	}
	for _, tc := range a.b.topics.Snapshot().TopicConfigTable {
		if _, ok := w.TopicConfigTable[tc.TopicName]; !ok && !a.b.topics.IsSystem(tc.TopicName) {
			if _, err := a.b.topics.Delete(tc.TopicName); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func (a metadataApplier) ApplyConsumerOffsets(body []byte) error {
	if !a.b.followsMaster.Load() {
		return nil // not before the epoch check: see handOverOffsets
	}
	table, err := decodeOffsetTable(body)
	if err != nil {
		return err
	}
	for k, qs := range table {
		topic, group, ok := splitOffsetKey(k)
		if !ok {
			continue
		}
		if old := a.b.offsets.QueryAll(group, topic); sameOffsets(old, qs) {
			continue
		}
		a.b.offsets.Set(group, topic, qs)
	}
	return a.b.offsets.Persist(false)
}

// decodeOffsetTable reads GET_ALL_CONSUMER_OFFSET's body: "topic@group" -> queue id ->
// offset.
func decodeOffsetTable(body []byte) (map[string]map[int32]int64, error) {
	var w struct {
		OffsetTable map[string]map[int32]int64 `json:"offsetTable"`
	}
	if err := protocol.Decode(body, &w); err != nil {
		return nil, err
	}
	return w.OffsetTable, nil
}

func splitOffsetKey(k string) (topic, group string, ok bool) {
	for i := len(k) - 1; i >= 0; i-- {
		if k[i:i+1] == metadata.OffsetKeySeparator {
			return k[:i], k[i+1:], true
		}
	}
	return "", "", false
}

func sameOffsets(a, b map[int32]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func (a metadataApplier) ApplyDelayOffsets(body []byte) error {
	if _, err := schedule.DecodeOffsets(body); err != nil {
		return err
	}
	path := filepath.Join(metadata.ConfigDir(a.b.cfg.Get().StorePathRootDir), schedule.OffsetFile)
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, body) {
		return nil
	}
	return metadata.WriteFileAtomic(path, body)
}

func (a metadataApplier) ApplySubscriptionGroups(body []byte) error {
	var w struct {
		SubscriptionGroupTable map[string]*protocol.SubscriptionGroupConfig `json:"subscriptionGroupTable"`
	}
	if err := protocol.Decode(body, &w); err != nil {
		return err
	}
	var errs []error
	for name, gc := range w.SubscriptionGroupTable {
		if gc == nil || name == "" {
			continue
		}
		if old, ok := a.b.groups.Get(name); ok && old == *gc {
			continue
		}
		if err := a.b.groups.Put(*gc); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
