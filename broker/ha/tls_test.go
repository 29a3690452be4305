package ha

import (
	"crypto/tls"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/remoting"
	"github.com/openrmq/rocketmq-operator/pkg/tlsconfig"
	"github.com/openrmq/rocketmq-operator/pkg/tlsconfig/tlstest"
)

// A master whose HA port enforces TLS replicates to a TLS slave with a client
// certificate, and refuses a plain-text slave (4.9.7's HA has no TLS: a Java slave
// needs permissive mode).
func TestReplicateOverTLSAndRefusePlainSlaves(t *testing.T) {
	ca := tlstest.NewCA(t, "ha ca")
	server, client := ca.Issue(t, "master", tlstest.Options{}), ca.Issue(t, "slave", tlstest.Options{})
	master := openStore(t, "")
	srv := startMaster(t, master, func(c *ServerConfig) {
		c.TLS = &remoting.ServerTLS{Mode: remoting.TLSEnforcing, HandshakeTimeout: time.Second, Config: &tls.Config{
			Certificates: []tls.Certificate{server.Pair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool()}}
	})

	plain := openStore(t, "")
	startSlave(t, plain, srv.Addr().String())

	slave := openStore(t, "")
	c := NewClient(slave, ClientConfig{
		MasterAddr: srv.Addr().String(), HeartbeatInterval: 200 * time.Millisecond, HousekeepingInterval: 2 * time.Second,
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, Logger: quiet,
		TLS: tlsconfig.NewClientConfig(ca.Pool(), &client.Pair, nil),
	})
	c.Start()
	t.Cleanup(func() { c.Close() })

	putN(t, master, 0, 200)
	srv.Notify()
	waitCaughtUp(t, master, slave)
	assertSameCommitLog(t, master, slave, 0)
	assertSameQueues(t, master, slave, 200)
	waitFor(t, 2*time.Second, "ack", func() bool { return srv.SlaveAckOffset() == master.CommitLogMaxOffset() })
	if plain.CommitLogMaxOffset() != 0 {
		t.Fatalf("the plain-text slave got %d bytes", plain.CommitLogMaxOffset())
	}
	reported := 0 // the plain slave's attempts may be connected, never reporting
	for _, s := range srv.Slaves() {
		if s.AckOffset >= 0 {
			reported++
		}
	}
	if reported != 1 {
		t.Errorf("%d slaves reported, want the TLS one only: %+v", reported, srv.Slaves())
	}
}
