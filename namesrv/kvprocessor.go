package namesrv

import (
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

func (n *NameServer) putKVConfig(_ *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.PutKVConfigRequestHeader
	if err := remoting.DecodeHeader(req, &h); err != nil {
		return nil, err
	}
	if err := n.kv.put(h.Namespace, h.Key, h.Value); err != nil {
		n.log.Error("kv config not persisted", "err", err)
		return nil, err
	}
	n.log.Info("kv config put", "namespace", h.Namespace, "key", h.Key, "value", h.Value)
	return ok(req, nil), nil
}

func (n *NameServer) getKVConfig(_ *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.GetKVConfigRequestHeader
	if err := remoting.DecodeHeader(req, &h); err != nil {
		return nil, err
	}
	v, found := n.kv.get(h.Namespace, h.Key)
	if !found {
		return req.NewResponse(remoting.QueryNotFound, "No config item, Namespace: "+h.Namespace+" Key: "+h.Key), nil
	}
	resp := ok(req, nil)
	resp.ExtFields = remoting.EncodeHeader(&protocol.GetKVConfigResponseHeader{Value: v})
	return resp, nil
}

func (n *NameServer) deleteKVConfig(_ *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.DeleteKVConfigRequestHeader
	if err := remoting.DecodeHeader(req, &h); err != nil {
		return nil, err
	}
	if err := n.kv.remove(h.Namespace, h.Key); err != nil {
		n.log.Error("kv config not persisted", "err", err)
		return nil, err
	}
	n.log.Info("kv config deleted", "namespace", h.Namespace, "key", h.Key)
	return ok(req, nil), nil
}

func (n *NameServer) getKVListByNamespace(_ *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.GetKVListByNamespaceRequestHeader
	if err := remoting.DecodeHeader(req, &h); err != nil {
		return nil, err
	}
	body := n.kv.namespaceJSON(h.Namespace)
	if body == nil {
		return req.NewResponse(remoting.QueryNotFound, "No config item, Namespace: "+h.Namespace), nil
	}
	return ok(req, body), nil
}
