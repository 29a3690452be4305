package namesrv

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// handler serves one request code. Its error becomes a SYSTEM_ERROR response whose remark
// is the error text, the way Java reports a RemotingCommandException.
type handler func(conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error)

func (n *NameServer) routesHandlers() map[int16]handler {
	return map[int16]handler{
		remoting.PutKVConfig:                      n.putKVConfig,
		remoting.GetKVConfig:                      n.getKVConfig,
		remoting.DeleteKVConfig:                   n.deleteKVConfig,
		remoting.GetKVListByNamespace:             n.getKVListByNamespace,
		remoting.RegisterBroker:                   n.registerBroker,
		remoting.UnregisterBroker:                 n.unregisterBroker,
		remoting.QueryDataVersion:                 n.queryDataVersion,
		remoting.GetRouteInfoByTopic:              n.getRouteInfoByTopic,
		remoting.GetBrokerClusterInfo:             n.getBrokerClusterInfo,
		remoting.GetAllTopicListFromNameServer:    n.getAllTopicList,
		remoting.DeleteTopicInNameServer:          n.deleteTopic,
		remoting.GetTopicsByCluster:               n.getTopicsByCluster,
		remoting.GetSystemTopicListFromNameServer: n.getSystemTopicList,
		remoting.WipeWritePermOfBroker:            n.wipeWritePerm,
		remoting.AddWritePermOfBroker:             n.addWritePerm,
		remoting.GetNameServerConfig:              n.getConfig,
		remoting.UpdateNameServerConfig:           n.updateConfig,
	}
}

func (h handler) adapt() remoting.Handler {
	return remoting.ErrHandlerFunc(func(_ context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
		return h(conn, req)
	})
}

func ok(req *remoting.Command, body []byte) *remoting.Command {
	resp := req.NewResponse(remoting.Success, "")
	resp.Body = body
	return resp
}

func (n *NameServer) registerBroker(conn *remoting.Conn, req *remoting.Command) (_ *remoting.Command, err error) {
	result := regError
	defer func() { n.metrics.registration(result) }()
	var h protocol.RegisterBrokerRequestHeader
	if err := remoting.DecodeHeader(req, &h); err != nil {
		return nil, err
	}
	if h.BrokerName == "" || h.BrokerAddr == "" {
		return nil, fmt.Errorf("register broker: empty brokerName or brokerAddr")
	}
	if h.BodyCrc32 != 0 && int32(crc32.ChecksumIEEE(req.Body)&0x7FFFFFFF) != h.BodyCrc32 {
		n.log.Warn("register broker: body crc32 mismatch", "broker", h.BrokerAddr, "remote", conn.RemoteAddr())
		return req.NewResponse(remoting.SystemError, "crc32 not match"), nil
	}
	var topics *protocol.TopicConfigSerializeWrapper
	var filters []string
	if len(req.Body) > 0 {
		body, err := protocol.DecodeRegisterBrokerBody(req.Body, h.Compressed)
		if err != nil {
			return nil, fmt.Errorf("failed to decode RegisterBrokerBody: %v", err)
		}
		topics, filters = &body.TopicConfigSerializeWrapper, body.FilterServerList
		if filters == nil {
			filters = []string{}
		}
	} else {
		topics = &protocol.TopicConfigSerializeWrapper{}
	}
	limit := n.config().MaxBrokersPerConnection
	res, err := n.routes.register(registration{
		cluster: h.ClusterName, brokerName: h.BrokerName, brokerAddr: h.BrokerAddr,
		haServerAddr: h.HaServerAddr, brokerID: h.BrokerID, masterEpoch: h.MasterEpoch,
		topics: topics, filterServers: filters, conn: conn,
	}, time.Now(), limit)
	var stale *staleMasterError
	if errors.As(err, &stale) {
		result = regRefused
		// A fenced master retries every few seconds until it is reconfigured.
		if ok, held := n.staleLog.allow(time.Now()); ok {
			n.log.Warn("register broker refused: an older master than the group's", "cluster", h.ClusterName,
				"broker", h.BrokerName, "addr", h.BrokerAddr, "masterEpoch", stale.epoch, "groupEpoch", stale.groupEpoch,
				"refusedSinceLastLine", held)
		}
		return req.NewResponse(remoting.SystemError, stale.Error()), nil
	}
	if err != nil {
		result = regRefused
		// A client can provoke this at will: log it at most once per interval.
		if ok, held := n.refusedLog.allow(time.Now()); ok {
			n.log.Warn("register broker refused: too many brokers on one connection", "addr", h.BrokerAddr,
				"remote", conn.RemoteAddr(), "maxBrokersPerConnection", limit, "refusedSinceLastLine", held)
		}
		return nil, fmt.Errorf("register broker %s refused: connection %s already registered %d broker addresses (maxBrokersPerConnection)",
			h.BrokerAddr, conn.RemoteAddr(), limit)
	}
	// The connection may have closed while this request waited for a worker: OnClose then
	// found nothing to remove, so the registration must not outlive it.
	if conn.Err() != nil {
		n.routes.removeConn(conn)
	}
	level := slog.LevelDebug
	if res.isNew {
		level = slog.LevelInfo
	}
	n.log.Log(context.Background(), level, "broker registered", "cluster", h.ClusterName, "broker", h.BrokerName,
		"id", h.BrokerID, "addr", h.BrokerAddr, "topics", len(topics.TopicConfigTable), "remote", conn.RemoteAddr())
	resp := ok(req, n.kv.namespaceJSON(protocol.NamespaceOrderTopicConfig))
	resp.ExtFields = remoting.EncodeHeader(&protocol.RegisterBrokerResponseHeader{HaServerAddr: res.masterHA, MasterAddr: res.masterAddr})
	result = regSuccess
	return resp, nil
}

func (n *NameServer) unregisterBroker(_ *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.UnregisterBrokerRequestHeader
	if err := remoting.DecodeHeader(req, &h); err != nil {
		return nil, err
	}
	if n.routes.unregister(h.BrokerAddr, h.BrokerName, h.BrokerID) {
		n.metrics.removed(removedUnregistered, 1)
	}
	n.log.Info("broker unregistered", "cluster", h.ClusterName, "broker", h.BrokerName, "id", h.BrokerID, "addr", h.BrokerAddr)
	return ok(req, nil), nil
}

func (n *NameServer) queryDataVersion(_ *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.QueryDataVersionRequestHeader
	if err := remoting.DecodeHeader(req, &h); err != nil {
		return nil, err
	}
	var dv protocol.DataVersion
	if err := protocol.Decode(req.Body, &dv); err != nil {
		return nil, fmt.Errorf("cannot decode DataVersion body: %v", err)
	}
	have, known := n.routes.dataVersion(h.BrokerAddr)
	changed := !known || have != dv
	if !changed {
		n.routes.touch(h.BrokerAddr, time.Now())
	}
	resp := ok(req, nil)
	if known {
		resp.Body = protocol.MustEncode(have)
	}
	resp.ExtFields = remoting.EncodeHeader(&protocol.QueryDataVersionResponseHeader{Changed: changed})
	return resp, nil
}

func (n *NameServer) getRouteInfoByTopic(_ *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.GetRouteInfoRequestHeader
	if err := remoting.DecodeHeader(req, &h); err != nil {
		return nil, err
	}
	rd := n.routes.route(h.Topic)
	n.metrics.lookup(rd != nil)
	if rd == nil {
		return req.NewResponse(remoting.TopicNotExist, "No topic route info in name server for the topic: "+h.Topic), nil
	}
	if n.config().OrderMessageEnable {
		if conf, found := n.kv.get(protocol.NamespaceOrderTopicConfig, h.Topic); found {
			rd.OrderTopicConf = conf
		}
	}
	return ok(req, protocol.MustEncode(rd)), nil
}

func (n *NameServer) getBrokerClusterInfo(_ *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	return ok(req, protocol.MustEncode(n.routes.clusterInfo())), nil
}

func (n *NameServer) getAllTopicList(_ *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	return ok(req, protocol.MustEncode(protocol.TopicList{TopicList: n.routes.allTopics()})), nil
}

func (n *NameServer) deleteTopic(_ *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.DeleteTopicFromNamesrvRequestHeader
	if err := remoting.DecodeHeader(req, &h); err != nil {
		return nil, err
	}
	n.routes.deleteTopic(h.Topic, h.ClusterName)
	n.log.Info("topic deleted", "topic", h.Topic, "cluster", h.ClusterName)
	return ok(req, nil), nil
}

func (n *NameServer) getTopicsByCluster(_ *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.GetTopicsByClusterRequestHeader
	if err := remoting.DecodeHeader(req, &h); err != nil {
		return nil, err
	}
	return ok(req, protocol.MustEncode(protocol.TopicList{TopicList: n.routes.topicsByCluster(h.Cluster)})), nil
}

func (n *NameServer) getSystemTopicList(_ *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	return ok(req, protocol.MustEncode(n.routes.systemTopics())), nil
}

func (n *NameServer) wipeWritePerm(_ *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.WipeWritePermOfBrokerRequestHeader
	if err := remoting.DecodeHeader(req, &h); err != nil {
		return nil, err
	}
	cnt := n.routes.setWritePerm(h.BrokerName, true)
	n.log.Info("write permission wiped", "broker", h.BrokerName, "topics", cnt)
	resp := ok(req, nil)
	resp.ExtFields = remoting.EncodeHeader(&protocol.WipeWritePermOfBrokerResponseHeader{WipeTopicCount: int32(cnt)})
	return resp, nil
}

func (n *NameServer) addWritePerm(_ *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.AddWritePermOfBrokerRequestHeader
	if err := remoting.DecodeHeader(req, &h); err != nil {
		return nil, err
	}
	cnt := n.routes.setWritePerm(h.BrokerName, false)
	n.log.Info("write permission restored", "broker", h.BrokerName, "topics", cnt)
	resp := ok(req, nil)
	resp.ExtFields = remoting.EncodeHeader(&protocol.AddWritePermOfBrokerResponseHeader{AddTopicCount: int32(cnt)})
	return resp, nil
}

// getConfig answers GET_NAMESRV_CONFIG with the effective settings as properties text.
func (n *NameServer) getConfig(_ *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	cfg := n.config()
	return ok(req, []byte(cfg.Properties())), nil
}
