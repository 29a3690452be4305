package e2e

import (
	"context"
	"fmt"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// startHAPair starts a master (brokerId 0, role) and a slave (brokerId 1) of brokerName.
func startHAPair(t *testing.T, brokerName, role string, slaveExtra map[string]string) (master, slave *brokerProc) {
	t.Helper()
	master = startTestBroker(t, brokerName, map[string]string{
		"listenPort": strconv.Itoa(freePort(2)), "brokerRole": role,
	})
	conf := map[string]string{
		"listenPort": strconv.Itoa(freePort(2)), "brokerName": brokerName, "brokerId": "1",
		"brokerRole": "SLAVE", "slaveReadEnable": "true", "slaveSynchronizeInterval": "300",
	}
	for k, v := range slaveExtra {
		conf[k] = v
	}
	slave = startTestBroker(t, brokerName+"-slave", conf)
	return master, slave
}

// routeAddrs returns brokerName's brokerAddrs in topic's route (nil without a route).
func routeAddrs(t *testing.T, topic, brokerName string) map[int64]string {
	t.Helper()
	resp := invoke(t, namesrvAddr, remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil)
	if resp.Code != remoting.Success {
		return nil
	}
	var rd protocol.TopicRouteData
	if err := protocol.Decode(resp.Body, &rd); err != nil {
		t.Fatalf("route of %s: %v", topic, err)
	}
	for _, bd := range rd.BrokerDatas {
		if bd.BrokerName == brokerName {
			return bd.BrokerAddrs
		}
	}
	return nil
}

// TestHAAsyncMasterSlave: an ASYNC_MASTER replicates its commitlog and topic config to
// a SLAVE of the same brokerName; the slave refuses sends; after the master is stopped
// the route holds only the slave and a consumer reads every message from it.
func TestHAAsyncMasterSlave(t *testing.T) {
	t.Parallel()
	const brokerName, topic, n = "broker-ha-async", "E2EHAAsync", 20
	master, slave := startHAPair(t, brokerName, "ASYNC_MASTER", nil)
	createTopic(t, master, topic, 2)
	eventually(t, 10*time.Second, "master and slave in the route", func() bool {
		a := routeAddrs(t, topic, brokerName)
		return a[0] == master.addr && a[1] == slave.addr
	})

	p := newProducer(t, "E2EHAAsyncP")
	for i := range n {
		res := sendSync(t, p, msg(topic, fmt.Sprintf("ha-%d", i), ""))
		if res.MessageQueue.BrokerName != brokerName {
			t.Fatalf("sent to %s", res.MessageQueue.BrokerName)
		}
	}
	// Consume queues are built behind the commitlog, as in RocketMQ.
	eventually(t, 10*time.Second, "the master's consume queues to hold every message", func() bool {
		return sum(maxOffsets(t, master, topic, 2)) == n
	})
	eventually(t, 10*time.Second, "the slave's consume queues to catch up", func() bool {
		return sum(maxOffsets(t, slave, topic, 2)) == n
	})
	eventually(t, 10*time.Second, "the topic config to reach the slave", func() bool {
		_, ok := brokerTopics(t, slave)[topic]
		return ok
	})

	// A slave takes no writes (4.9.7: SERVICE_NOT_AVAILABLE).
	resp := invoke(t, slave.addr, remoting.SendMessage, map[string]string{
		"producerGroup": "E2EHAAsyncP", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
		"queueId": "0", "sysFlag": "0", "bornTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10), "flag": "0",
	}, []byte("to-slave"))
	if resp.Code != remoting.ServiceNotAvailable {
		t.Fatalf("send to the slave: code %d %s, want %d", resp.Code, resp.Remark, remoting.ServiceNotAvailable)
	}

	if err := master.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("stop master: %v", err)
	}
	eventually(t, 10*time.Second, "a route with the slave only", func() bool {
		a := routeAddrs(t, topic, brokerName)
		return len(a) == 1 && a[1] == slave.addr
	})

	// The Go client's push consumer reads a new group's offsets from the master only
	// (FindBrokerAddrByName), so it cannot start a queue without one; its pull consumer
	// takes any broker of the route (FindBrokerAddressInSubscribe), as Java's does.
	pc := startPull(t, "E2EHAAsyncC", topic, "c")
	got := map[string]bool{}
	for q := range 2 {
		mq := &primitive.MessageQueue{Topic: topic, BrokerName: brokerName, QueueId: q}
		var off int64
		deadline := time.Now().Add(15 * time.Second)
		for off < maxOffsets(t, slave, topic, 2)[q] {
			if time.Now().After(deadline) {
				t.Fatalf("queue %d: pulled up to %d only", q, off)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			res, err := pc.PullFrom(ctx, mq, off, 32)
			cancel()
			if err != nil {
				t.Logf("pull queue %d from %d: %v", q, off, err)
				time.Sleep(200 * time.Millisecond)
				continue
			}
			if res.Status != primitive.PullFound {
				t.Logf("pull queue %d from %d: status %v", q, off, res.Status)
				time.Sleep(200 * time.Millisecond)
				continue
			}
			for _, m := range res.GetMessageExts() {
				got[string(m.Body)] = true
				if m.StoreHost != master.addr {
					t.Errorf("message %s: store host %s, want the master's %s", m.Body, m.StoreHost, master.addr)
				}
			}
			off = res.NextBeginOffset
		}
	}
	for i := range n {
		if body := fmt.Sprintf("ha-%d", i); !got[body] {
			t.Errorf("message %s not read from the slave", body)
		}
	}
}

// TestHASyncMaster: a SYNC_MASTER answers SEND_OK while its slave is up and
// SLAVE_NOT_AVAILABLE once the slave is gone (the message is stored either way).
func TestHASyncMaster(t *testing.T) {
	t.Parallel()
	const brokerName, topic = "broker-ha-sync", "E2EHASync"
	master, slave := startHAPair(t, brokerName, "SYNC_MASTER", nil)
	createTopic(t, master, topic, 1)
	p := newProducer(t, "E2EHASyncP")

	// The first send can race the slave's first connection: wait for a SEND_OK.
	// A send answered at all is stored, whatever its status.
	var stored int64
	eventually(t, 10*time.Second, "a SEND_OK from the SYNC_MASTER with its slave", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		res, err := p.SendSync(ctx, msg(topic, "sync-first", ""))
		if err != nil {
			t.Fatalf("first send to the SYNC_MASTER: %v", err)
		}
		stored++
		return res.Status == primitive.SendOK
	})
	for i := range 5 {
		sendSync(t, p, msg(topic, fmt.Sprintf("sync-%d", i), ""))
	}
	before := stored + 5
	eventually(t, 5*time.Second, "the master's consume queue to hold every stored send", func() bool {
		return sum(maxOffsets(t, master, topic, 1)) == before
	})
	eventually(t, 5*time.Second, "the slave to hold what the master acknowledged", func() bool {
		return sum(maxOffsets(t, slave, topic, 1)) == before
	})

	if err := slave.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("stop slave: %v", err)
	}
	// The master may not have seen the connection close yet: a send then waits
	// slaveTimeout and answers FLUSH_SLAVE_TIMEOUT. Every send is stored.
	sends := 0
	eventually(t, 15*time.Second, "SLAVE_NOT_AVAILABLE from the SYNC_MASTER without its slave", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := p.SendSync(ctx, msg(topic, fmt.Sprintf("no-slave-%d", sends), ""))
		if err != nil {
			t.Fatalf("send without slave: %v", err)
		}
		sends++
		switch res.Status {
		case primitive.SendSlaveNotAvailable:
			return true
		case primitive.SendFlushSlaveTimeout:
			return false
		}
		t.Fatalf("send without slave: status %v, want SendSlaveNotAvailable (%v)", res.Status, primitive.SendSlaveNotAvailable)
		return false
	})
	eventually(t, 5*time.Second, "every send without the slave stored anyway", func() bool {
		return sum(maxOffsets(t, master, topic, 1)) == before+int64(sends)
	})
}
