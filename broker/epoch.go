package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/broker/ha"
	"github.com/openrmq/rocketmq-operator/broker/metadata"
	"github.com/openrmq/rocketmq-operator/broker/store"
	"github.com/openrmq/rocketmq-operator/pkg/admin"
	"github.com/openrmq/rocketmq-operator/pkg/atomicfile"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// Failover on the broker's side: epochs, the role change, the rejoin cut and fencing.
// The operator decides; the broker keeps the invariants a decision relies on.
//
//   - A master started with masterEpoch N above the last epoch of its history begins
//     epoch N at its commitlog end and records it (epochFile, fsync'ed) before it takes
//     a write.
//   - UPDATE_BROKER_CONFIG carrying one of config.RoleKeys is a role change: answered,
//     then the broker reopens with the new config (Reopened). Reopening is a clean stop
//     and a start in the same process: dispatch finishes, a slave's partly received last
//     record is cut by the store's open, and the new role registers as any start does.
//   - A slave reads its master's history (GET_BROKER_RUNTIME_INFO's epochHistory) before
//     each HA connection. It never follows a master whose newest epoch is older than its
//     own; bytes it holds past the start of the first epoch it does not share (an old
//     master's unreplicated tail) are cut, once logged with their offsets
//     (store.RequestCut, then a reopen). A master without the key (a 4.x broker) has
//     an empty history: nothing is cut, as in 4.x.
//   - A master registers with its epoch; a name server that knows a newer master of the
//     group refuses it (protocol.StaleMasterRemark), and the broker then refuses writes
//     as a slave does until it reopens: it is fenced.

// epochFile, beside the store, holds the epoch history and the last rejoin cut.
const epochFile = "epochs.json"

type epochState struct {
	History ha.History `json:"history"`
	// LastCut is what the last rejoin cut, kept for GET_BROKER_RUNTIME_INFO (the
	// operator's Event) until the next one.
	LastCut *store.Cut `json:"lastCut,omitempty"`
}

func (b *Broker) epochPath() string {
	return filepath.Join(b.cfg.Get().StorePathRootDir, epochFile)
}

// loadEpochs reads the history and, on a master given a newer masterEpoch, begins it at
// the end of the store just opened.
func (b *Broker) loadEpochs(c *config.Config) error {
	var st epochState
	if _, err := atomicfile.Read(b.epochPath(), func(data []byte) error {
		st = epochState{}
		if err := json.Unmarshal(data, &st); err != nil {
			return err
		}
		return st.History.Valid()
	}); err != nil {
		return fmt.Errorf("broker: epoch history: %w", err)
	}
	changed := false
	if cut := b.store.LastCut; cut != (store.Cut{}) {
		st.LastCut, changed = &cut, true
	}
	if c.BrokerRole != config.Slave && c.MasterEpoch > st.History.Last().Epoch {
		start := b.store.CommitLogMaxOffset()
		h, err := st.History.Begin(c.MasterEpoch, start)
		if err != nil {
			return err
		}
		st.History, changed = h, true
		b.log.Info("master epoch begun", "epoch", c.MasterEpoch, "startOffset", start, "history", h.String())
		if err := b.adoptTopics(); err != nil {
			return err
		}
	}
	b.epochs = st
	if changed {
		return b.saveEpochs(st)
	}
	return nil
}

// adoptTopics gives a master beginning an epoch a config for every topic its store holds
// queues of but its topic table lacks: as a slave it replicated their messages, but a
// slave copies topic configs only every slaveSynchronizeInterval, so a topic created
// shortly before its master was lost would refuse its producers (TOPIC_NOT_EXIST) and
// consumers on the new master. Queue numbers are the highest queue id seen plus one; a
// Topic resource's own numbers reach the new master at the operator's next look.
// Retry and dead-letter topics are left to the send-back path, which creates them.
func (b *Broker) adoptTopics() error {
	queues := map[string]int32{}
	for _, q := range b.store.Queues() {
		queues[q.Topic] = max(queues[q.Topic], q.QueueID+1)
	}
	var adopted []string
	for topic, n := range queues {
		if _, ok := b.topics.Get(topic); ok || b.topics.IsSystem(topic) ||
			strings.HasPrefix(topic, protocol.RetryGroupTopicPrefix) || strings.HasPrefix(topic, protocol.DLQGroupTopicPrefix) {
			continue
		}
		tc := *protocol.NewTopicConfig(topic)
		tc.ReadQueueNums, tc.WriteQueueNums = int(n), int(n)
		if err := b.topics.Put(tc); err != nil {
			return fmt.Errorf("broker: adopt topic %s: %w", topic, err)
		}
		adopted = append(adopted, topic)
	}
	if len(adopted) > 0 {
		slices.Sort(adopted)
		b.log.Warn("topics the store holds but the topic table lacked, adopted on becoming master", "topics", adopted)
	}
	return nil
}

func (b *Broker) saveEpochs(st epochState) error {
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(b.epochPath(), data); err != nil {
		return fmt.Errorf("broker: write epoch history: %w", err)
	}
	return nil
}

// history is the epoch history this broker holds.
func (b *Broker) history() ha.History {
	b.epochMu.Lock()
	defer b.epochMu.Unlock()
	return b.epochs.History
}

// registrationEpoch is the epoch a master registers with; 0 for a slave.
func (b *Broker) registrationEpoch(c config.Config) int64 {
	if c.BrokerRole == config.Slave {
		return 0
	}
	return b.history().Last().Epoch
}

// epochTable adds the failover keys to GET_BROKER_RUNTIME_INFO's table (not Java keys).
func (b *Broker) epochTable(table map[string]string) {
	b.epochMu.Lock()
	st := b.epochs
	b.epochMu.Unlock()
	table["epochHistory"] = st.History.String()
	table["masterEpoch"] = strconv.FormatInt(st.History.Last().Epoch, 10)
	if st.LastCut != nil {
		table["lastEpochCut"] = fmt.Sprintf("%d-%d", st.LastCut.From, st.LastCut.To)
	}
	if b.fenced.Load() {
		table["fenced"] = "true"
	}
}

// Reopened delivers the config the broker must reopen with after a role change or a
// rejoin cut: the caller shuts this Broker down and starts a new one with it on the same
// store (cmd/broker does).
func (b *Broker) Reopened() <-chan config.Config { return b.reopen }

// requestReopen hands c to Reopened; a newer request replaces one not yet taken.
func (b *Broker) requestReopen(c config.Config, why string) {
	b.reopenMu.Lock()
	defer b.reopenMu.Unlock()
	select {
	case <-b.reopen:
	default:
	}
	b.reopen <- c
	b.log.Warn("broker reopens", "why", why, "role", c.BrokerRole, "brokerId", c.BrokerID, "masterEpoch", c.MasterEpoch)
}

// roleChange answers an UPDATE_BROKER_CONFIG holding role keys: the broker reopens with
// next once the answer is out (Shutdown waits for it). A slave promoted with an epoch
// not above its history's is refused: it would reuse a term another master had.
func (b *Broker) roleChange(next config.Config) error {
	cur := b.cfg.Get()
	last := b.history().Last().Epoch
	promoted := cur.BrokerRole == config.Slave || next.MasterEpoch != cur.MasterEpoch
	if next.BrokerRole != config.Slave && promoted && next.MasterEpoch <= last {
		return fmt.Errorf("%w: masterEpoch %d is not above this broker's last epoch %d", config.ErrInvalid, next.MasterEpoch, last)
	}
	b.requestReopen(next, "role change")
	return nil
}

// checkMaster runs before each HA connection of a slave to the master at haAddr: it
// compares histories and refuses a stale master, or requests the rejoin cut and a
// reopen (returning an error so that no byte is replicated before it).
func (b *Broker) checkMaster(haAddr string) error {
	addr := b.haSync.MasterAddr()
	if addr == "" {
		addr = metadataAddrOfHA(haAddr)
	}
	if addr == "" {
		return errors.New("the master's broker address is not known yet")
	}
	master, err := b.masterHistory(addr)
	if err != nil {
		return fmt.Errorf("read the master's epoch history at %s: %w", addr, err)
	}
	local, end := b.history(), b.store.CommitLogMaxOffset()
	at, cut, err := ha.Divergence(local, master, end)
	if err != nil {
		return err
	}
	if cut {
		b.log.Warn("this broker holds commitlog bytes the group's master never had: cutting them to rejoin as a slave",
			"from", at, "to", end, "bytes", end-at, "localHistory", local.String(), "masterHistory", master.String())
		if err := store.RequestCut(b.cfg.Get().StorePathRootDir, at); err != nil {
			return err
		}
		b.requestReopen(b.cfg.Get(), "rejoin cut")
		return errRejoinCut
	}
	if master.Last().Epoch > local.Last().Epoch {
		if err := b.handOverOffsets(addr); err != nil {
			return fmt.Errorf("hand consumer offsets over to the master at %s: %w", addr, err)
		}
	}
	// Learn the master's epochs: this broker may be promoted some day.
	if master.String() != local.String() && len(master) > 0 {
		b.epochMu.Lock()
		st := b.epochs
		st.History = master
		err := b.saveEpochs(st)
		if err == nil {
			b.epochs = st
		}
		b.epochMu.Unlock()
		if err != nil {
			return err
		}
	}
	b.followsMaster.Store(true)
	return nil
}

// handOverOffsets runs when this slave first follows a master of a newer epoch than its
// own (the old master rejoining, or another slave of a group that failed over): the
// consumer offsets it holds above the master's are committed to the master, capped at
// its queues' ends (what it cut is gone, and the master's messages past there are
// others), before the synchronizer replaces its table with the master's (followsMaster).
// A consumer that committed to the old master after the last sync then resumes where it
// was, not where that sync left the new master.
func (b *Broker) handOverOffsets(addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := b.nsClient.Invoke(ctx, addr, remoting.NewRequest(remoting.GetAllConsumerOffset, nil, nil))
	if err != nil {
		return err
	}
	if resp.Code != remoting.Success {
		return fmt.Errorf("GET_ALL_CONSUMER_OFFSET: code %d: %s", resp.Code, resp.Remark)
	}
	theirs, err := decodeOffsetTable(resp.Body)
	if err != nil {
		return err
	}
	adm := admin.New(b.nsClient)
	handed := 0
	for _, q := range b.offsets.AppendAll(nil) {
		off := min(q.Offset, b.store.MaxOffsetInQueue(q.Topic, q.QueueID))
		if master, ok := theirs[q.Topic+metadata.OffsetKeySeparator+q.Group][q.QueueID]; ok && off <= master {
			continue
		}
		if err := adm.CommitOffset(ctx, addr, q.Group, protocol.MessageQueue{Topic: q.Topic, QueueID: q.QueueID}, off); err != nil {
			return err
		}
		handed++
	}
	if handed > 0 {
		b.log.Info("consumer offsets above the new master's handed over to it", "queues", handed, "master", addr)
	}
	return nil
}

var errRejoinCut = errors.New("broker: commitlog cut requested; replication resumes after the reopen")

// masterHistory reads the epoch history of the master at its remoting address. A
// master that answers without the key has none.
func (b *Broker) masterHistory(addr string) (ha.History, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	table, err := admin.New(b.nsClient).RuntimeInfo(ctx, addr)
	if err != nil {
		return nil, err
	}
	return ha.ParseHistory(table["epochHistory"])
}

// fence makes this master refuse writes: a name server knows a newer master of its
// group. Only a reopen (with the operator's new role) lifts it.
func (b *Broker) fence(remark string) {
	if !b.fenced.Swap(true) {
		b.log.Error("fenced: a newer master of this group is registered; writes are refused until this broker is reconfigured",
			"remark", remark, "epoch", b.history().Last().Epoch)
	}
}

// refusesWrites reports whether the broker takes no message: a slave, or a fenced master.
func (b *Broker) refusesWrites(c *config.Config) bool {
	return c.BrokerRole == config.Slave || b.fenced.Load()
}
