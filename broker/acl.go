package broker

import (
	"net/netip"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/acl"
	"github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// aclPollInterval is how often the ACL file is looked at: Java's AclFileWatchService's 5 s.
const aclPollInterval = 5 * time.Second

// initACL loads the ACL file when aclEnable=true. A file that does not parse stops the
// broker from starting rather than leave it refusing (or letting in) everyone.
func (b *Broker) initACL(c *config.Config) error {
	if !c.AclEnable {
		return nil
	}
	w, err := acl.Open(c.ACLFile(), b.log)
	if err != nil {
		return err
	}
	b.acl = w
	b.log.Info("ACL enabled", "file", w.Path())
	return nil
}

// checkACL runs ahead of every handler (beforeHandle), on the pool worker where Java runs
// its RPC hooks, so that a refusal costs the same pool slot as in Java. It answers a
// refused request as 4.9.7 does: the hook's AclException becomes a
// SYSTEM_ERROR whose remark names it, which clients report as is.
func (b *Broker) checkACL(conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	denied := b.acl.Check(acl.Request{Code: req.Code, Fields: req.Fields(), Body: req.Body, RemoteIP: remoteIP(conn)})
	if denied == nil {
		return nil
	}
	b.log.Warn("request refused by ACL", "code", req.Code, "remote", conn.RemoteAddr(), "reason", denied.Error())
	b.metrics.aclRefusal(req.Code)
	return req.NewResponse(remoting.SystemError, denied.Remark())
}

// watchACL re-reads the ACL file every aclPollInterval until shutdown.
func (b *Broker) watchACL() {
	if b.acl != nil {
		b.every(func() time.Duration { return aclPollInterval }, func() { b.acl.Poll() }, nil)
	}
}

func remoteIP(conn *remoting.Conn) netip.Addr { return conn.RemoteAddrPort().Addr().Unmap() }
