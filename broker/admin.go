package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/broker/metadata"
	"github.com/openrmq/rocketmq-operator/pkg/message"
	"github.com/openrmq/rocketmq-operator/pkg/names"
	"github.com/openrmq/rocketmq-operator/pkg/properties"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// The RocketMQ version this broker announces, and versions that gate behaviour
// (Java's MQVersion.Version ordinals).
const (
	brokerVersion = "V4_9_7" // remoting.Version is its ordinal
	versionV3_4_9 = 121      // clients from here send maxReconsumeTimes
)

func (b *Broker) registerAdmin(pool *remoting.Pool) {
	for code, f := range map[int16]remoting.ErrHandlerFunc{
		remoting.UpdateAndCreateTopic:             b.handleCreateTopic,
		remoting.DeleteTopicInBroker:              b.handleDeleteTopic,
		remoting.GetAllTopicConfig:                b.handleGetAllTopicConfig,
		remoting.UpdateAndCreateSubscriptionGroup: b.handleCreateGroup,
		remoting.GetAllSubscriptionGroupConfig:    b.handleGetAllGroups,
		remoting.DeleteSubscriptionGroup:          b.handleDeleteGroup,
		remoting.GetTopicStatsInfo:                b.handleTopicStats,
		remoting.GetBrokerRuntimeInfo:             b.handleRuntimeInfo,
		remoting.GetBrokerConfig:                  b.handleGetBrokerConfig,
		remoting.UpdateBrokerConfig:               b.handleUpdateBrokerConfig,
		remoting.ViewMessageByID:                  b.handleViewMessage,
		remoting.QueryMessage:                     b.handleQueryMessage,
		remoting.GetConsumerConnectionList:        b.handleConsumerConnections,
		remoting.GetConsumeStats:                  b.handleConsumeStats,
		remoting.InvokeBrokerToResetOffset:        b.handleResetOffset,
		remoting.CloneGroupOffset:                 b.handleCloneGroupOffset,
		remoting.GetAllConsumerOffset:             b.handleGetAllConsumerOffset,
		remoting.QueryTopicConsumeByWho:           b.handleTopicConsumeByWho,
		remoting.GetConsumerRunningInfo:           b.handleConsumerRunningInfo,
		remoting.ConsumeMessageDirectly:           b.handleConsumeMessageDirectly,
		remoting.ViewBrokerStatsData:              b.handleViewBrokerStats,
		remoting.GetBrokerConsumeStats:            b.handleBrokerConsumeStats,
		remoting.QueryConsumeQueue:                b.handleQueryConsumeQueue,
		remoting.CleanExpiredConsumeQueue:         b.handleCleanExpiredConsumeQueue,
		remoting.CleanUnusedTopic:                 b.handleCleanUnusedTopic,
	} {
		b.server.Handle(code, f, pool)
	}
}

type createTopicHeader struct {
	Topic           string `rmq:"topic,required"`
	DefaultTopic    string `rmq:"defaultTopic"`
	ReadQueueNums   int    `rmq:"readQueueNums,required"`
	WriteQueueNums  int    `rmq:"writeQueueNums,required"`
	Perm            int    `rmq:"perm,required"`
	TopicFilterType string `rmq:"topicFilterType"`
	TopicSysFlag    int    `rmq:"topicSysFlag"`
	Order           bool   `rmq:"order"`
}

func (b *Broker) handleCreateTopic(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	var h createTopicHeader
	if err := remoting.DecodeHeader(req, &h); err != nil {
		return nil, err
	}
	if err := names.Topic(h.Topic); err != nil {
		return nil, err
	}
	if b.topics.IsSystem(h.Topic) || strings.HasPrefix(strings.ToLower(h.Topic), "rmq_sys_") {
		return req.NewResponse(remoting.SystemError, fmt.Sprintf("The topic[%s] is conflict with system topic.", h.Topic)), nil
	}
	if h.ReadQueueNums <= 0 || h.WriteQueueNums <= 0 || h.ReadQueueNums > 1024 || h.WriteQueueNums > 1024 {
		return req.NewResponse(remoting.SystemError, fmt.Sprintf("queue numbers %d/%d out of range 1..1024", h.ReadQueueNums, h.WriteQueueNums)), nil
	}
	if h.TopicFilterType == "" {
		h.TopicFilterType = protocol.TopicFilterTypeSingleTag
	}
	tc := protocol.TopicConfig{TopicName: h.Topic, ReadQueueNums: h.ReadQueueNums, WriteQueueNums: h.WriteQueueNums,
		Perm: h.Perm, TopicFilterType: h.TopicFilterType, TopicSysFlag: h.TopicSysFlag, Order: h.Order}
	if err := b.topics.Update(tc); err != nil {
		return nil, err
	}
	b.log.Info("topic created or updated", "topic", h.Topic, "read", h.ReadQueueNums, "write", h.WriteQueueNums, "perm", h.Perm, "by", conn.RemoteAddr())
	// As 4.9.7 (registerIncrementBrokerData before the answer): once the admin has its
	// answer, the name servers route the topic, and a client that sends at once finds it.
	b.registerAll()
	return req.NewResponse(remoting.Success, ""), nil
}

func (b *Broker) handleDeleteTopic(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	topic := req.Field("topic")
	if topic == "" {
		return req.NewResponse(remoting.SystemError, "the custom field <topic> is null"), nil
	}
	if b.topics.IsSystem(topic) {
		return req.NewResponse(remoting.SystemError, fmt.Sprintf("The topic[%s] is conflict with system topic.", topic)), nil
	}
	if _, err := b.topics.Delete(topic); err != nil {
		return nil, err
	}
	b.offsets.RemoveTopic(topic)
	if err := b.store.DeleteTopic(topic); err != nil {
		return nil, err
	}
	b.log.Info("topic deleted", "topic", topic, "by", conn.RemoteAddr())
	return req.NewResponse(remoting.Success, ""), nil
}

func (b *Broker) handleGetAllTopicConfig(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	return withBody(req, protocol.MustEncode(b.topics.Snapshot())), nil
}

func (b *Broker) handleCreateGroup(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	gc := metadata.NewSubscriptionGroupConfig("")
	if err := json.Unmarshal(req.Body, &gc); err != nil || gc.GroupName == "" {
		return nil, fmt.Errorf("bad subscription group config: %w", err)
	}
	if err := b.groups.Put(gc); err != nil {
		return nil, err
	}
	return req.NewResponse(remoting.Success, ""), nil
}

func (b *Broker) handleGetAllGroups(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	return withBody(req, b.groups.Encode()), nil
}

func (b *Broker) handleDeleteGroup(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	group := req.Field("groupName")
	if group == "" {
		return req.NewResponse(remoting.SystemError, "the custom field <groupName> is null"), nil
	}
	if _, err := b.groups.Delete(group); err != nil {
		return nil, err
	}
	if strings.EqualFold(req.Field("cleanOffset"), "true") {
		b.offsets.RemoveGroup(group)
	}
	return req.NewResponse(remoting.Success, ""), nil
}

type topicOffset struct {
	LastUpdateTimestamp int64 `json:"lastUpdateTimestamp"`
	MaxOffset           int64 `json:"maxOffset"`
	MinOffset           int64 `json:"minOffset"`
}

func (b *Broker) handleTopicStats(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	topic := req.Field("topic")
	tc, ok := b.topics.Get(topic)
	if !ok {
		return req.NewResponse(remoting.TopicNotExist, fmt.Sprintf("topic[%s] not exist", topic)), nil
	}
	name := b.cfg.Get().BrokerName
	table := map[protocol.MessageQueue]topicOffset{}
	for q := range int32(tc.WriteQueueNums) {
		o := topicOffset{MinOffset: max(b.store.MinOffsetInQueue(topic, q), 0), MaxOffset: max(b.store.MaxOffsetInQueue(topic, q), 0)}
		if o.MaxOffset > 0 {
			if ts := b.store.MessageStoreTime(topic, q, o.MaxOffset-1); ts >= 0 {
				o.LastUpdateTimestamp = ts
			}
		}
		table[protocol.MessageQueue{BrokerName: name, QueueID: q, Topic: topic}] = o
	}
	enc, err := protocol.EncodeMQTable(table)
	if err != nil {
		return nil, err
	}
	return withBody(req, fmt.Appendf(nil, `{"offsetTable":%s}`, enc)), nil
}

func (b *Broker) handleRuntimeInfo(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	c := b.cfg.Get()
	producers, consumers := b.clients.Counts()
	table := map[string]string{
		"brokerVersionDesc":                    brokerVersion,
		"brokerVersion":                        strconv.Itoa(int(remoting.Version)),
		"bootTimestamp":                        strconv.FormatInt(b.startTime.UnixMilli(), 10),
		"runtime":                              fmt.Sprintf("[ %s ]", time.Since(b.startTime).Round(time.Second)),
		"commitLogMaxOffset":                   strconv.FormatInt(b.store.CommitLogMaxOffset(), 10),
		"brokerRole":                           c.BrokerRole,
		"pullRequestHoldNum":                   strconv.Itoa(b.holder.Len()),
		"producerConnections":                  strconv.Itoa(producers),
		"consumerConnections":                  strconv.Itoa(consumers),
		"goroutines":                           strconv.Itoa(runtime.NumGoroutine()),
		"commitLogMinOffset":                   strconv.FormatInt(b.store.CommitLogMinOffset(), 10),
		"dispatchBehindBytes":                  strconv.FormatInt(b.store.DispatchBehind(), 10),
		"pageCacheLockTimeMills":               strconv.FormatInt(b.store.AppendHeldFor().Milliseconds(), 10),
		"sendThreadPoolQueueHeadWaitTimeMills": strconv.FormatInt(b.pools.send.HeadWait().Milliseconds(), 10),
		"pullThreadPoolQueueHeadWaitTimeMills": strconv.FormatInt(b.pools.pull.HeadWait().Milliseconds(), 10),
		"earliestMessageTimeStamp":             strconv.FormatInt(b.earliestMessageTime(), 10),
		"commitLogDiskRatio":                   fmt.Sprintf("%.4f", diskUsedRatio(c.StorePathRootDir)),
		"sendThreadPoolQueueSize":              strconv.Itoa(b.pools.send.Waiting()),
		"sendThreadPoolQueueCapacity":          strconv.Itoa(c.SendThreadPoolQueueCapacity),
		"pullThreadPoolQueueSize":              strconv.Itoa(b.pools.pull.Waiting()),
		"pullThreadPoolQueueCapacity":          strconv.Itoa(c.PullThreadPoolQueueCapacity),
		"startAcceptSendRequestTimeStamp":      "0",
	}
	// Not Java keys: damaged commitlog ranges known, and reads that refused one.
	table["commitLogDamagedRanges"] = strconv.Itoa(len(b.store.Damaged()))
	table["commitLogDamagedReads"] = strconv.FormatInt(b.store.DamagedReads(), 10)
	b.epochTable(table)
	b.stats.table(table)
	return withBody(req, protocol.MustEncode(map[string]any{"table": table})), nil
}

func (b *Broker) handleGetBrokerConfig(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	c := b.cfg.Get()
	resp := req.NewResponse(remoting.Success, "")
	resp.Body = []byte(properties.Format(c.Properties()))
	resp.SetField("version", string(protocol.MustEncode(b.topics.DataVersion())))
	return resp, nil
}

func (b *Broker) handleUpdateBrokerConfig(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	props, err := properties.Parse(bytes.NewReader(req.Body))
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, p := range props {
		m[p.Key] = p.Value
	}
	if roleChange(m) {
		next, err := b.cfg.WithRole(m)
		if err != nil {
			return nil, err
		}
		if err := b.roleChange(next); err != nil {
			return nil, err
		}
		b.log.Info("role change", "keys", slices.Sorted(maps.Keys(m)), "by", conn.RemoteAddr())
		return req.NewResponse(remoting.Success, ""), nil
	}
	changed, err := b.cfg.Update(m)
	if err != nil {
		return nil, err
	}
	b.log.Info("broker config updated", "keys", changed, "by", conn.RemoteAddr())
	// Kept for operators to see, as the Java broker does; the -c file is not rewritten
	// and stays what a restart reads.
	c := b.cfg.Get()
	if err := metadata.WriteFileAtomic(filepath.Join(metadata.ConfigDir(c.StorePathRootDir), "broker.properties"),
		[]byte(properties.Format(c.Properties()))); err != nil {
		b.log.Warn("cannot write broker.properties", "err", err)
	}
	if slices.Contains(changed, "namesrvAddr") || slices.Contains(changed, "brokerPermission") {
		b.kickRegister()
	}
	return req.NewResponse(remoting.Success, ""), nil
}

func (b *Broker) handleViewMessage(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	off, err := strconv.ParseInt(req.Field("offset"), 10, 64)
	if err != nil {
		return req.NewResponse(remoting.SystemError, "the custom field <offset> is invalid"), nil
	}
	rec, err := b.store.CopyRawMessage(off)
	if err != nil {
		return req.NewResponse(remoting.SystemError, fmt.Sprintf("can not find message by the offset, %d", off)), nil
	}
	return withBody(req, rec), nil
}

type queryMessageHeader struct {
	Topic          string `rmq:"topic,required"`
	Key            string `rmq:"key,required"`
	MaxNum         int    `rmq:"maxNum,required"`
	BeginTimestamp int64  `rmq:"beginTimestamp,required"`
	EndTimestamp   int64  `rmq:"endTimestamp,required"`
}

func (b *Broker) handleQueryMessage(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	var h queryMessageHeader
	if err := remoting.DecodeHeader(req, &h); err != nil {
		return nil, err
	}
	if h.MaxNum <= 0 || h.MaxNum > 64 {
		h.MaxNum = 64
	}
	var recs [][]byte
	for _, phy := range b.store.QueryMessage(h.Topic, h.Key, h.MaxNum, h.BeginTimestamp, h.EndTimestamp) {
		if rec, err := b.store.CopyRawMessage(phy); err == nil {
			recs = append(recs, rec)
		}
	}
	if len(recs) == 0 {
		return req.NewResponse(remoting.QueryNotFound, "can not find message, maybe time range not correct"), nil
	}
	resp := req.NewResponse(remoting.Success, "")
	resp.SetField("indexLastUpdateTimestamp", strconv.FormatInt(time.Now().UnixMilli(), 10))
	resp.SetField("indexLastUpdatePhyoffset", strconv.FormatInt(b.store.CommitLogMaxOffset(), 10))
	for _, r := range recs {
		resp.Body = append(resp.Body, r...)
	}
	return resp, nil
}

// earliestMessageTime is the store time of the oldest stored message (now when empty).
func (b *Broker) earliestMessageTime() int64 {
	if rec, err := b.store.CopyRawMessage(b.store.CommitLogMinOffset()); err == nil {
		if v, err := message.ParseRecord(rec); err == nil {
			return v.StoreTimestamp()
		}
	}
	return time.Now().UnixMilli()
}

// diskUsedRatio is the used fraction of the file system holding dir.
func diskUsedRatio(dir string) float64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil || st.Blocks == 0 {
		return 0
	}
	return 1 - float64(st.Bavail)/float64(st.Blocks)
}

// handleTopicConsumeByWho serves QUERY_TOPIC_CONSUME_BY_WHO: the groups online on the
// topic or with offsets in it.
func (b *Broker) handleTopicConsumeByWho(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	topic := req.Field("topic")
	set := map[string]bool{}
	for _, g := range b.clients.GroupsSubscribing(topic) {
		set[g] = true
	}
	for _, g := range b.offsets.GroupsOf(topic) {
		set[g] = true
	}
	groups := make([]string, 0, len(set))
	for g := range set {
		groups = append(groups, g)
	}
	slices.Sort(groups)
	return withBody(req, protocol.MustEncode(map[string][]string{"groupList": groups})), nil
}

// roleChange reports whether an UPDATE_BROKER_CONFIG changes the role (config.RoleKeys).
func roleChange(props map[string]string) bool {
	for k := range props {
		if slices.Contains(config.RoleKeys, k) {
			return true
		}
	}
	return false
}
