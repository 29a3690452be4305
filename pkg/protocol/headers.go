package protocol

// Custom headers of the name-server requests and responses, for remoting.DecodeHeader and
// remoting.EncodeHeader. Field names are Java's.

// RegisterBrokerRequestHeader is REGISTER_BROKER's request header.
type RegisterBrokerRequestHeader struct {
	BrokerName   string `rmq:"brokerName,required"`
	BrokerAddr   string `rmq:"brokerAddr,required"`
	ClusterName  string `rmq:"clusterName,required"`
	HaServerAddr string `rmq:"haServerAddr,required"`
	BrokerID     int64  `rmq:"brokerId,required"`
	Compressed   bool   `rmq:"compressed"`
	BodyCrc32    int32  `rmq:"bodyCrc32"` // 0: not checked
	// MasterEpoch is not a Java field: a master's term (broker/ha.Epoch), 0 when its
	// group never failed over. A name server refuses a master older than one it knows.
	MasterEpoch int64 `rmq:"masterEpoch"`
}

// StaleMasterRemark starts the remark of a REGISTER_BROKER refused because the name
// server knows a newer master of the group; the broker then fences itself.
const StaleMasterRemark = "stale master epoch: "

// RegisterBrokerResponseHeader tells a slave its master's address and HA address.
type RegisterBrokerResponseHeader struct {
	HaServerAddr string `rmq:"haServerAddr"`
	MasterAddr   string `rmq:"masterAddr"`
}

// UnregisterBrokerRequestHeader is UNREGISTER_BROKER's request header.
type UnregisterBrokerRequestHeader struct {
	BrokerName  string `rmq:"brokerName,required"`
	BrokerAddr  string `rmq:"brokerAddr,required"`
	ClusterName string `rmq:"clusterName,required"`
	BrokerID    int64  `rmq:"brokerId,required"`
}

// GetRouteInfoRequestHeader is GET_ROUTEINFO_BY_TOPIC's request header.
type GetRouteInfoRequestHeader struct {
	Topic                  string `rmq:"topic,required"`
	AcceptStandardJSONOnly *bool  `rmq:"acceptStandardJsonOnly"`
}

// PutKVConfigRequestHeader is PUT_KV_CONFIG's request header.
type PutKVConfigRequestHeader struct {
	Namespace string `rmq:"namespace,required"`
	Key       string `rmq:"key,required"`
	Value     string `rmq:"value,required"`
}

// GetKVConfigRequestHeader is GET_KV_CONFIG's request header.
type GetKVConfigRequestHeader struct {
	Namespace string `rmq:"namespace,required"`
	Key       string `rmq:"key,required"`
}

// GetKVConfigResponseHeader carries the value GET_KV_CONFIG found.
type GetKVConfigResponseHeader struct {
	Value string `rmq:"value"`
}

// DeleteKVConfigRequestHeader is DELETE_KV_CONFIG's request header.
type DeleteKVConfigRequestHeader struct {
	Namespace string `rmq:"namespace,required"`
	Key       string `rmq:"key,required"`
}

// GetKVListByNamespaceRequestHeader is GET_KVLIST_BY_NAMESPACE's request header.
type GetKVListByNamespaceRequestHeader struct {
	Namespace string `rmq:"namespace,required"`
}

// DeleteTopicFromNamesrvRequestHeader is DELETE_TOPIC_IN_NAMESRV's request header. An
// empty ClusterName deletes the topic everywhere.
type DeleteTopicFromNamesrvRequestHeader struct {
	Topic       string `rmq:"topic,required"`
	ClusterName string `rmq:"clusterName"`
}

// GetTopicsByClusterRequestHeader is GET_TOPICS_BY_CLUSTER's request header.
type GetTopicsByClusterRequestHeader struct {
	Cluster string `rmq:"cluster,required"`
}

// QueryDataVersionRequestHeader is QUERY_DATA_VERSION's request header; the body is the
// broker's DataVersion.
type QueryDataVersionRequestHeader struct {
	BrokerName  string `rmq:"brokerName,required"`
	BrokerAddr  string `rmq:"brokerAddr,required"`
	ClusterName string `rmq:"clusterName,required"`
	BrokerID    int64  `rmq:"brokerId,required"`
}

// QueryDataVersionResponseHeader says whether the name server's version differs.
type QueryDataVersionResponseHeader struct {
	Changed bool `rmq:"changed"`
}

// WipeWritePermOfBrokerRequestHeader is WIPE_WRITE_PERM_OF_BROKER's request header.
type WipeWritePermOfBrokerRequestHeader struct {
	BrokerName string `rmq:"brokerName,required"`
}

// WipeWritePermOfBrokerResponseHeader counts the topics changed.
type WipeWritePermOfBrokerResponseHeader struct {
	WipeTopicCount int32 `rmq:"wipeTopicCount"`
}

// AddWritePermOfBrokerRequestHeader is ADD_WRITE_PERM_OF_BROKER's request header.
type AddWritePermOfBrokerRequestHeader struct {
	BrokerName string `rmq:"brokerName,required"`
}

// AddWritePermOfBrokerResponseHeader counts the topics changed.
type AddWritePermOfBrokerResponseHeader struct {
	AddTopicCount int32 `rmq:"addTopicCount"`
}
