package protocol

import "sort"

// QueueData is one broker's share of a topic in a route.
type QueueData struct {
	BrokerName     string `json:"brokerName"`
	ReadQueueNums  int    `json:"readQueueNums"`
	WriteQueueNums int    `json:"writeQueueNums"`
	Perm           int    `json:"perm"`
	TopicSysFlag   int    `json:"topicSysFlag"`
}

// BrokerData is one broker group: a master (brokerId 0) and its slaves.
type BrokerData struct {
	Cluster     string           `json:"cluster"`
	BrokerName  string           `json:"brokerName"`
	BrokerAddrs map[int64]string `json:"brokerAddrs"`
}

// Clone returns a deep copy of b.
func (b *BrokerData) Clone() *BrokerData {
	c := &BrokerData{Cluster: b.Cluster, BrokerName: b.BrokerName, BrokerAddrs: make(map[int64]string, len(b.BrokerAddrs))}
	for id, addr := range b.BrokerAddrs {
		c.BrokerAddrs[id] = addr
	}
	return c
}

// MasterAddr returns the master's address, or "" when the group has none.
func (b *BrokerData) MasterAddr() string { return b.BrokerAddrs[MasterID] }

// SelectAddr returns the master's address, else the lowest-id slave's, else "".
func (b *BrokerData) SelectAddr() string {
	if a := b.BrokerAddrs[MasterID]; a != "" {
		return a
	}
	ids := make([]int64, 0, len(b.BrokerAddrs))
	for id := range b.BrokerAddrs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	if len(ids) == 0 {
		return ""
	}
	return b.BrokerAddrs[ids[0]]
}

// TopicRouteData answers GET_ROUTEINFO_BY_TOPIC.
type TopicRouteData struct {
	OrderTopicConf    string              `json:"orderTopicConf,omitempty"`
	QueueDatas        []*QueueData        `json:"queueDatas"`
	BrokerDatas       []*BrokerData       `json:"brokerDatas"`
	FilterServerTable map[string][]string `json:"filterServerTable"`
}

// ClusterInfo answers GET_BROKER_CLUSTER_INFO: broker groups by name, broker names by cluster.
type ClusterInfo struct {
	BrokerAddrTable  map[string]*BrokerData `json:"brokerAddrTable"`
	ClusterAddrTable map[string][]string    `json:"clusterAddrTable"`
}

// TopicList answers the topic-listing requests. BrokerAddr is set only by
// GET_SYSTEM_TOPIC_LIST_FROM_NS (any one broker's address).
type TopicList struct {
	TopicList  []string `json:"topicList"`
	BrokerAddr string   `json:"brokerAddr,omitempty"`
}

// KVTable is one KV-config namespace (GET_KVLIST_BY_NAMESPACE, REGISTER_BROKER's body).
type KVTable struct {
	Table map[string]string `json:"table"`
}
