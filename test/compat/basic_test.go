//go:build compat

package compat

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

const (
	registrationTimeout = 60 * time.Second // the broker registers at boot and then every 10 s
	routeTimeout        = 30 * time.Second // a created topic is registered at once
	consumeTimeout      = 90 * time.Second
)

// Response codes of the name server (RocketMQ ResponseCode).
const (
	codeSuccess       = 0
	codeTopicNotExist = 17
	codeQueryNotFound = 22
)

// clusterInfo is GET_BROKER_CLUSTER_INFO's body (ClusterInfo).
type clusterInfo struct {
	BrokerAddrTable map[string]struct {
		Cluster     string            `json:"cluster"`
		BrokerName  string            `json:"brokerName"`
		BrokerAddrs map[string]string `json:"brokerAddrs"`
	} `json:"brokerAddrTable"`
	ClusterAddrTable map[string][]string `json:"clusterAddrTable"`
}

// topicRoute is GET_ROUTEINFO_BY_TOPIC's body (TopicRouteData).
type topicRoute struct {
	QueueDatas []struct {
		BrokerName     string `json:"brokerName"`
		ReadQueueNums  int    `json:"readQueueNums"`
		WriteQueueNums int    `json:"writeQueueNums"`
		Perm           int    `json:"perm"`
	} `json:"queueDatas"`
	BrokerDatas []struct {
		Cluster     string            `json:"cluster"`
		BrokerName  string            `json:"brokerName"`
		BrokerAddrs map[string]string `json:"brokerAddrs"`
	} `json:"brokerDatas"`
}

// bareKey matches the unquoted integer map keys that fastjson writes ({0:"addr"}), which
// the Java name server sends and encoding/json rejects.
var bareKey = regexp.MustCompile(`([{,])\s*(-?\d+)\s*:`)

func decodeJSON(body []byte, v any) error {
	fixed := bareKey.ReplaceAll(body, []byte(`$1"$2":`))
	if err := json.Unmarshal(fixed, v); err != nil {
		return fmt.Errorf("decoding %q: %w", body, err)
	}
	return nil
}

// invokeNamesrv sends one request with our remoting client and returns the response.
func invokeNamesrv(t *testing.T, addr string, code int16, fields map[string]string) (*remoting.Command, error) {
	t.Helper()
	cl := remoting.NewClient(remoting.ClientConfig{})
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cl.Invoke(ctx, addr, remoting.NewRequest(code, fields, nil))
	if err != nil {
		return nil, fmt.Errorf("request %d to %s: %w", code, addr, err)
	}
	return resp, nil
}

func getClusterInfo(t *testing.T, addr string) (*clusterInfo, error) {
	resp, err := invokeNamesrv(t, addr, remoting.GetBrokerClusterInfo, nil)
	if err != nil {
		return nil, err
	}
	if resp.Code != codeSuccess {
		return nil, fmt.Errorf("GET_BROKER_CLUSTER_INFO (106): response code %d, remark %q", resp.Code, resp.Remark)
	}
	var ci clusterInfo
	if err := decodeJSON(resp.Body, &ci); err != nil {
		return nil, fmt.Errorf("GET_BROKER_CLUSTER_INFO (106) body: %w", err)
	}
	return &ci, nil
}

func getRoute(t *testing.T, addr, topic string) (*topicRoute, error) {
	resp, err := invokeNamesrv(t, addr, remoting.GetRouteInfoByTopic, map[string]string{"topic": topic})
	if err != nil {
		return nil, err
	}
	if resp.Code != codeSuccess {
		return nil, fmt.Errorf("GET_ROUTEINFO_BY_TOPIC (105) topic %s: response code %d, remark %q", topic, resp.Code, resp.Remark)
	}
	var r topicRoute
	if err := decodeJSON(resp.Body, &r); err != nil {
		return nil, fmt.Errorf("GET_ROUTEINFO_BY_TOPIC (105) topic %s body: %w", topic, err)
	}
	return &r, nil
}

// checkRoute says whether route r sends topic's queues to broker b at addr.
func checkRoute(r *topicRoute, brokerName, cluster, addr string, writeQueues int) error {
	var qOK, bOK bool
	for _, q := range r.QueueDatas {
		if q.BrokerName == brokerName {
			if writeQueues > 0 && (q.WriteQueueNums != writeQueues || q.ReadQueueNums != writeQueues) {
				return fmt.Errorf("queueData for %s has read/write queues %d/%d, want %d/%d", brokerName, q.ReadQueueNums, q.WriteQueueNums, writeQueues, writeQueues)
			}
			qOK = true
		}
	}
	for _, b := range r.BrokerDatas {
		if b.BrokerName == brokerName {
			if b.Cluster != cluster {
				return fmt.Errorf("brokerData for %s has cluster %q, want %q", brokerName, b.Cluster, cluster)
			}
			if b.BrokerAddrs["0"] != addr {
				return fmt.Errorf("brokerData for %s has brokerAddrs %v, want {0: %s}", brokerName, b.BrokerAddrs, addr)
			}
			bOK = true
		}
	}
	if !qOK || !bOK {
		return fmt.Errorf("route has no queueData/brokerData for broker %s: %+v", brokerName, *r)
	}
	return nil
}

// TestJavaBrokerRegisters: the Java broker's REGISTER_BROKER reaches the name server, which
// then reports the broker in GET_BROKER_CLUSTER_INFO and routes the broker's own topics.
func TestJavaBrokerRegisters(t *testing.T) {
	f := env(t)
	b := f.broker
	err := eventually(registrationTimeout, 500*time.Millisecond, func() error {
		ci, err := getClusterInfo(t, f.ns.Addr)
		if err != nil {
			return err
		}
		bd, ok := ci.BrokerAddrTable[b.Name]
		if !ok {
			return fmt.Errorf("GET_BROKER_CLUSTER_INFO (106): brokerAddrTable has no %s: %+v", b.Name, ci)
		}
		if bd.Cluster != b.Cluster || bd.BrokerName != b.Name || bd.BrokerAddrs["0"] != b.Addr {
			return fmt.Errorf("GET_BROKER_CLUSTER_INFO (106): brokerAddrTable[%s] = %+v, want cluster %s, brokerAddrs {0: %s}", b.Name, bd, b.Cluster, b.Addr)
		}
		if !slices.Contains(ci.ClusterAddrTable[b.Cluster], b.Name) {
			return fmt.Errorf("GET_BROKER_CLUSTER_INFO (106): clusterAddrTable[%s] = %v, want it to hold %s", b.Cluster, ci.ClusterAddrTable[b.Cluster], b.Name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// Topics every 4.9.x broker creates and registers: its own name, its cluster's name
	// and SELF_TEST_TOPIC.
	for _, topic := range []string{b.Name, b.Cluster, "SELF_TEST_TOPIC"} {
		err := eventually(routeTimeout, 500*time.Millisecond, func() error {
			r, err := getRoute(t, f.ns.Addr, topic)
			if err != nil {
				return err
			}
			return checkRoute(r, b.Name, b.Cluster, b.Addr, 0)
		})
		if err != nil {
			t.Errorf("route of %s: %v", topic, err)
		}
	}

	// An unknown topic is TOPIC_NOT_EXIST, which the clients rely on.
	resp, err := invokeNamesrv(t, f.ns.Addr, remoting.GetRouteInfoByTopic, map[string]string{"topic": uniq("compat_no_such_topic")})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != codeTopicNotExist {
		t.Errorf("GET_ROUTEINFO_BY_TOPIC (105) for an unknown topic: code %d (remark %q), want TOPIC_NOT_EXIST (17)", resp.Code, resp.Remark)
	}
}

// newAdmin returns the official Go admin client pointed at the name server under test.
func newAdmin(t *testing.T, f *fixture) admin.Admin {
	t.Helper()
	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{f.ns.Addr})))
	if err != nil {
		t.Fatalf("admin.NewAdmin: %v", err)
	}
	t.Cleanup(func() { _ = adm.Close() })
	return adm
}

// createTopic creates topic on the Java broker with the official Go admin client and waits
// until the name server under test routes it to that broker.
func createTopic(t *testing.T, f *fixture, adm admin.Admin, topic string, queues int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := adm.CreateTopic(ctx,
		admin.WithTopicCreate(topic),
		admin.WithBrokerAddrCreate(f.broker.Addr),
		admin.WithReadQueueNums(queues),
		admin.WithWriteQueueNums(queues),
	)
	if err != nil {
		t.Fatalf("admin.CreateTopic(%s) on Java broker %s: %v", topic, f.broker.Addr, err)
	}
	err = eventually(routeTimeout, 250*time.Millisecond, func() error {
		r, err := getRoute(t, f.ns.Addr, topic)
		if err != nil {
			return err
		}
		return checkRoute(r, f.broker.Name, f.broker.Cluster, f.broker.Addr, queues)
	})
	if err != nil {
		t.Fatalf("after creating %s on the Java broker (which then sends REGISTER_BROKER 103 with it), the name server's route: %v", topic, err)
	}
}

// TestGoProducerSendsThroughNamesrv: the official Go producer resolves a topic's route through
// the name server under test and sends to the Java broker; the official Go push consumer,
// also routed by that name server, reads the messages back from the Java broker.
func TestGoProducerSendsThroughNamesrv(t *testing.T) {
	f := env(t)
	adm := newAdmin(t, f)
	topic := uniq("compat_go_send")
	const queues = 4
	createTopic(t, f, adm, topic, queues)

	// The admin client's view of the route (the Go client parses it by hand).
	mqs, err := adm.FetchPublishMessageQueues(context.Background(), topic)
	if err != nil {
		t.Fatalf("admin.FetchPublishMessageQueues(%s) through the name server: %v", topic, err)
	}
	if len(mqs) != queues {
		t.Fatalf("admin.FetchPublishMessageQueues(%s): %d queues, want %d: %v", topic, len(mqs), queues, mqs)
	}
	for _, mq := range mqs {
		if mq.BrokerName != f.broker.Name {
			t.Errorf("queue %v: broker %q, want %q", mq, mq.BrokerName, f.broker.Name)
		}
	}

	p, err := producer.NewDefaultProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{f.ns.Addr})),
		producer.WithGroupName(uniq("compat_go_producer")),
		producer.WithInstanceName(uniq("compat_go_producer")),
		producer.WithRetry(2),
		producer.WithSendMsgTimeout(10*time.Second),
	)
	if err != nil {
		t.Fatalf("producer.NewDefaultProducer: %v", err)
	}
	if err := p.Start(); err != nil {
		t.Fatalf("producer.Start: %v", err)
	}
	defer func() { _ = p.Shutdown() }()

	const n = 8
	want := map[string]bool{}
	for i := range n {
		body := fmt.Sprintf("compat message %d of %s", i, topic)
		msg := primitive.NewMessage(topic, []byte(body))
		msg.WithTag("compat")
		msg.WithKeys([]string{fmt.Sprintf("key-%d", i)})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		res, err := p.SendSync(ctx, msg)
		cancel()
		if err != nil {
			t.Fatalf("SendSync #%d to %s: %v", i, topic, err)
		}
		if res.Status != primitive.SendOK {
			t.Fatalf("SendSync #%d: status %v, want SendOK: %s", i, res.Status, res)
		}
		if res.MessageQueue == nil || res.MessageQueue.BrokerName != f.broker.Name || res.MessageQueue.Topic != topic {
			t.Fatalf("SendSync #%d: sent to %v, want a queue of %s on %s", i, res.MessageQueue, topic, f.broker.Name)
		}
		if len(res.OffsetMsgID) != 32 {
			t.Errorf("SendSync #%d: offsetMsgId %q, want 32 hex chars", i, res.OffsetMsgID)
		}
		want[body] = true
	}
	t.Logf("sent %d messages to %s on %s through name server %s", n, topic, f.broker.Addr, f.ns.Addr)

	// Read them back from the Java broker.
	var mu sync.Mutex
	got := map[string]bool{}
	all := make(chan struct{})
	var closeOnce sync.Once
	c, err := consumer.NewPushConsumer(
		consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{f.ns.Addr})),
		consumer.WithGroupName(uniq("compat_go_consumer")),
		consumer.WithInstance(uniq("compat_go_consumer")),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	)
	if err != nil {
		t.Fatalf("consumer.NewPushConsumer: %v", err)
	}
	err = c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "compat"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				if want[string(m.Body)] {
					got[string(m.Body)] = true
				}
			}
			if len(got) == len(want) {
				closeOnce.Do(func() { close(all) })
			}
			return consumer.ConsumeSuccess, nil
		})
	if err != nil {
		t.Fatalf("consumer.Subscribe(%s): %v", topic, err)
	}
	if err := c.Start(); err != nil {
		t.Fatalf("consumer.Start: %v", err)
	}
	defer func() { _ = c.Shutdown() }()
	select {
	case <-all:
		t.Logf("consumed all %d messages back from the Java broker", n)
	case <-time.After(consumeTimeout):
		mu.Lock()
		defer mu.Unlock()
		var missing []string
		for b := range want {
			if !got[b] {
				missing = append(missing, b)
			}
		}
		slices.Sort(missing)
		t.Fatalf("push consumer through name server %s got %d of %d messages within %s; missing: %s",
			f.ns.Addr, len(got), len(want), consumeTimeout, strings.Join(missing, "; "))
	}
}

// TestGoAdminListsTopics: the official Go admin client's FetchAllTopicList
// (GET_ALL_TOPIC_LIST_FROM_NAMESERVER, 206) through the name server under test includes a
// topic created on the Java broker and the broker's own topics.
func TestGoAdminListsTopics(t *testing.T) {
	f := env(t)
	adm := newAdmin(t, f)
	topic := uniq("compat_go_list")
	createTopic(t, f, adm, topic, 2)

	err := eventually(routeTimeout, 500*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		list, err := adm.FetchAllTopicList(ctx)
		if err != nil {
			return fmt.Errorf("admin.FetchAllTopicList: %w", err)
		}
		for _, want := range []string{topic, f.broker.Name, f.broker.Cluster} {
			if !slices.Contains(list.TopicList, want) {
				return fmt.Errorf("admin.FetchAllTopicList (206) has no %s: %v", want, list.TopicList)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestGoAdminDeletesTopic: the official Go admin client's DeleteTopic removes a topic from
// the Java broker (DELETE_TOPIC_IN_BROKER 215) and from the name server
// (DELETE_TOPIC_IN_NAMESRV 216); the name server then no longer routes or lists it.
func TestGoAdminDeletesTopic(t *testing.T) {
	f := env(t)
	adm := newAdmin(t, f)
	topic := uniq("compat_go_delete")
	createTopic(t, f, adm, topic, 2)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := adm.DeleteTopic(ctx, admin.WithTopicDelete(topic), admin.WithBrokerAddrDelete(f.broker.Addr),
		admin.WithNameSrvAddr([]string{f.ns.Addr}))
	if err != nil {
		t.Fatalf("admin.DeleteTopic(%s): %v", topic, err)
	}
	err = eventually(routeTimeout, 500*time.Millisecond, func() error {
		resp, err := invokeNamesrv(t, f.ns.Addr, remoting.GetRouteInfoByTopic, map[string]string{"topic": topic})
		if err != nil {
			return err
		}
		if resp.Code != codeTopicNotExist {
			return fmt.Errorf("GET_ROUTEINFO_BY_TOPIC (105) of deleted topic %s: code %d, want TOPIC_NOT_EXIST (17); body %s", topic, resp.Code, resp.Body)
		}
		list, err := adm.FetchAllTopicList(ctx)
		if err != nil {
			return fmt.Errorf("admin.FetchAllTopicList: %w", err)
		}
		if slices.Contains(list.TopicList, topic) {
			return fmt.Errorf("admin.FetchAllTopicList (206) still lists deleted topic %s", topic)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
