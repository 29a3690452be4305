package namesrv

import (
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
)

// route returns the topic's route, or nil when no live broker serves it. Lists are
// sorted by broker name so repeated answers are byte-identical.
func (t *routeTable) route(topic string) *protocol.TopicRouteData {
	t.mu.RLock()
	defer t.mu.RUnlock()
	qs := t.topicQueues[topic]
	if len(qs) == 0 {
		return nil
	}
	rd := &protocol.TopicRouteData{FilterServerTable: map[string][]string{}}
	for _, name := range sortedKeys(qs) {
		q := *qs[name]
		rd.QueueDatas = append(rd.QueueDatas, &q)
		g := t.groups[name]
		if g == nil {
			continue
		}
		bd := g.data
		rd.BrokerDatas = append(rd.BrokerDatas, bd.Clone())
		for _, addr := range bd.BrokerAddrs {
			if fs, ok := t.filterServers[addr]; ok {
				rd.FilterServerTable[addr] = append([]string(nil), fs...)
			}
		}
	}
	if len(rd.BrokerDatas) == 0 {
		return nil
	}
	return rd
}

// clusterInfo returns every broker group and cluster.
func (t *routeTable) clusterInfo() *protocol.ClusterInfo {
	t.mu.RLock()
	defer t.mu.RUnlock()
	ci := &protocol.ClusterInfo{
		BrokerAddrTable:  make(map[string]*protocol.BrokerData, len(t.groups)),
		ClusterAddrTable: make(map[string][]string, len(t.clusters)),
	}
	for name, g := range t.groups {
		ci.BrokerAddrTable[name] = g.data.Clone()
	}
	for cluster, names := range t.clusters {
		ci.ClusterAddrTable[cluster] = sortedKeys(names)
	}
	return ci
}

// allTopics lists every topic with a route.
func (t *routeTable) allTopics() []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return nonNil(sortedKeys(t.topicQueues))
}

// topicsByCluster lists the topics any broker of cluster serves.
func (t *routeTable) topicsByCluster(cluster string) []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	names := t.clusters[cluster]
	var out []string
	for _, topic := range sortedKeys(t.topicQueues) {
		for name := range t.topicQueues[topic] {
			if _, ok := names[name]; ok {
				out = append(out, topic)
				break
			}
		}
	}
	return nonNil(out)
}

// systemTopics lists cluster and broker names (each is a topic in RocketMQ) and one
// broker address to ask, as GET_SYSTEM_TOPIC_LIST_FROM_NS does.
func (t *routeTable) systemTopics() protocol.TopicList {
	t.mu.RLock()
	defer t.mu.RUnlock()
	seen := map[string]struct{}{}
	for cluster, names := range t.clusters {
		seen[cluster] = struct{}{}
		for n := range names {
			seen[n] = struct{}{}
		}
	}
	tl := protocol.TopicList{TopicList: nonNil(sortedKeys(seen))}
	for _, name := range sortedKeys(t.groups) {
		if addr := t.groups[name].data.SelectAddr(); addr != "" {
			tl.BrokerAddr = addr
			break
		}
	}
	return tl
}

// deleteTopic removes a topic's queues: everywhere, or only on cluster's brokers.
func (t *routeTable) deleteTopic(topic, cluster string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for name := range t.topicQueues[topic] {
		if _, in := t.clusters[cluster][name]; cluster == "" || in {
			delete(t.groups[name].topics, topic)
			removeFromSet(t.topicQueues, topic, name)
		}
	}
}

// setWritePerm clears (wipe) or restores the write permission of every topic on
// brokerName and returns how many topics it touched. Restoring sets read-write, as Java.
func (t *routeTable) setWritePerm(brokerName string, wipe bool) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	g := t.groups[brokerName]
	if g == nil {
		return 0
	}
	for topic := range g.topics {
		q := t.topicQueues[topic][brokerName]
		if wipe {
			q.Perm &^= protocol.PermWrite
		} else {
			q.Perm = protocol.PermRead | protocol.PermWrite
		}
	}
	return len(g.topics)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
