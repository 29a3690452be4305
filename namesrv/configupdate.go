package namesrv

import (
	"bytes"
	"slices"
	"strings"

	"github.com/openrmq/rocketmq-operator/pkg/properties"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// configBlackList are the keys UPDATE_NAMESRV_CONFIG refuses, as 4.9.7's default
// configBlackList does: they name files, and a remote caller must not choose those.
var configBlackList = []string{"configBlackList", "configStorePath", "kvConfigPath"}

// restartOnly are keys read once at start; an update is accepted (Java stores it) but
// takes effect at the next start only.
var restartOnly = []string{"rocketmqHome", "bindAddress", "listenPort", "serverWorkerThreads", "scanNotActiveBrokerInterval",
	"serverChannelMaxIdleTimeSeconds", "serverFrameReadTimeoutMillis", "serverMaxConnections", "serverMaxConnectionsPerAddress",
	"serverMaxQueuedBytesPerConnection", "serverMaxQueuedBytesTotal"}

// config returns the current settings.
func (n *NameServer) config() Config {
	n.cfgMu.RLock()
	defer n.cfgMu.RUnlock()
	return n.cfg
}

// updateConfig answers UPDATE_NAMESRV_CONFIG (mqadmin updateNamesrvConfig): the body is
// properties text; every key is checked before any is applied, so a bad update changes
// nothing.
func (n *NameServer) updateConfig(conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	if len(req.Body) == 0 {
		return ok(req, nil), nil
	}
	props, err := properties.Parse(bytes.NewReader(req.Body))
	if err != nil {
		return req.NewResponse(remoting.SystemError, "string2Properties error: "+err.Error()), nil
	}
	for _, p := range props {
		// The tls.* keys name files too, and decide who may connect: not Java
		// NamesrvConfig fields, so 4.9.7 would ignore them; refused here.
		if slices.Contains(configBlackList, p.Key) || strings.HasPrefix(p.Key, "tls.") {
			return req.NewResponse(remoting.NoPermission, "Can not update config in black list."), nil
		}
	}
	n.cfgMu.Lock()
	defer n.cfgMu.Unlock()
	next := n.cfg
	for _, p := range props {
		if err := next.Set(p.Key, p.Value); err != nil {
			return req.NewResponse(remoting.SystemError, err.Error()), nil
		}
	}
	if err := next.Validate(); err != nil {
		return req.NewResponse(remoting.SystemError, err.Error()), nil
	}
	n.cfg = next
	for _, p := range props {
		msg := "config updated"
		if slices.Contains(restartOnly, p.Key) {
			msg = "config updated; takes effect at the next start"
		}
		n.log.Info(msg, "key", p.Key, "value", p.Value, "by", conn.RemoteAddr())
	}
	return ok(req, nil), nil
}
