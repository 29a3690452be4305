package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/openrmq/rocketmq-operator/pkg/remoting"
	"github.com/openrmq/rocketmq-operator/pkg/tlsconfig"
	"github.com/openrmq/rocketmq-operator/pkg/tlsconfig/tlstest"
)

// The official Go client's WithTls(true) dials TLS to the name server and the brokers
// and does not verify the server's certificate (InsecureSkipVerify; it has no option
// for a CA or a client certificate). It is also a process-wide switch: the option
// writes to the client's shared default remoting configuration, which every client
// made later, and every new connection of the running ones, reads. So these tests do
// not run in parallel, and set it back to plain text when they end (goClientTLS).

// tlsCluster is a name server and a broker that speak TLS in one mode, sharing one
// certificate kept as the kubelet keeps a mounted Secret.
type tlsCluster struct {
	ca     *tlstest.CA
	secret *tlstest.SecretDir // tls.crt, tls.key, ca.crt
	ns     string             // the name server's address
	nsProc *proc
	broker *brokerProc
	rc     *remoting.Client // our remoting client, over TLS, trusting ca
}

// tlsServerConf are the tls.* keys of a server in mode with the secret's pair; as the
// operator renders them (test mode off, so the files are used).
func (c *tlsCluster) tlsServerConf(mode string) map[string]string {
	return map[string]string{
		"tls.server.mode": mode, "tls.test.mode.enable": "false",
		"tls.server.certPath": c.secret.Path("tls.crt"), "tls.server.keyPath": c.secret.Path("tls.key"),
	}
}

// tlsBrokerConf adds the broker's own TLS: to the name server and the master, verifying
// their chain against ca.crt.
func (c *tlsCluster) tlsBrokerConf(mode string) map[string]string {
	kv := c.tlsServerConf(mode)
	kv["tls.enable"] = "true"
	kv["tls.client.authServer"] = "true"
	kv["tls.client.trustCertPath"] = c.secret.Path("ca.crt")
	kv["namesrvAddr"] = c.ns
	return kv
}

func startTLSCluster(t *testing.T, name, mode string) *tlsCluster {
	t.Helper()
	ca := tlstest.NewCA(t, name+" CA")
	leaf := ca.Issue(t, name+"-1", tlstest.Options{})
	dir := t.TempDir()
	c := &tlsCluster{ca: ca, secret: tlstest.NewSecretDir(t, filepath.Join(dir, "secret"), map[string][]byte{
		"tls.crt": leaf.CertPEM, "tls.key": leaf.KeyPEM, "ca.crt": ca.CertPEM})}
	c.rc = remoting.NewClient(remoting.ClientConfig{Logger: slog.New(slog.DiscardHandler), TLS: tlsconfig.NewClientConfig(ca.Pool(), nil, nil)})
	t.Cleanup(func() { c.rc.Close() })

	c.ns = "127.0.0.1:" + strconv.Itoa(freePort(0))
	_, port, _ := strings.Cut(c.ns, ":")
	var sb strings.Builder
	for k, v := range c.tlsServerConf(mode) {
		fmt.Fprintf(&sb, "%s=%s\n", k, v)
	}
	fmt.Fprintf(&sb, "listenPort=%s\nkvConfigPath=%s\n", port, filepath.Join(dir, "kv", "kvConfig.json"))
	conf := filepath.Join(dir, "namesrv.conf")
	if err := os.WriteFile(conf, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := startProc(filepath.Join(dir, "namesrv.log"), filepath.Join(binDir, "namesrv"), "-c", conf)
	if err != nil {
		t.Fatal(err)
	}
	c.nsProc = p
	t.Cleanup(func() {
		p.stop(syscall.SIGTERM)
		if t.Failed() {
			t.Logf("--- %s name server log (tail) ---\n%s", name, tail(p.output(), 4000))
		}
	})
	if err := waitListening(c.ns, 10*time.Second); err != nil {
		t.Fatalf("%v\n%s", err, p.output())
	}
	c.broker = startTestBroker(t, name, c.tlsBrokerConf(mode))
	return c
}

// invokeOn sends one request over cl.
func invokeOn(t *testing.T, cl *remoting.Client, addr string, code int16, fields map[string]string, body []byte) (*remoting.Command, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return cl.Invoke(ctx, addr, remoting.NewRequest(code, fields, body))
}

// createTopic creates topic over TLS and waits until the name server routes it.
func (c *tlsCluster) createTopic(t *testing.T, topic string, queues int) {
	t.Helper()
	resp, err := invokeOn(t, c.rc, c.broker.addr, remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "readQueueNums": strconv.Itoa(queues), "writeQueueNums": strconv.Itoa(queues), "perm": "6",
		"topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false",
	}, nil)
	if err != nil || resp.Code != remoting.Success {
		t.Fatalf("create topic %s over TLS: %v %v", topic, resp, err)
	}
	eventually(t, 15*time.Second, "the route of "+topic+" at the TLS name server", func() bool {
		resp, err := invokeOn(t, c.rc, c.ns, remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil)
		return err == nil && resp.Code == remoting.Success
	})
}

// goClientTLS sets the Go client's process-wide TLS switch for the rest of the test and
// back to plain text at its end.
func goClientTLS(t *testing.T, on bool) {
	t.Helper()
	setGoClientTLS(t, on)
	t.Cleanup(func() { setGoClientTLS(t, false) })
}

func setGoClientTLS(t *testing.T, on bool) {
	// An unstarted producer: applying its options is what flips the switch.
	if _, err := producer.NewDefaultProducer(producer.WithNameServer([]string{"127.0.0.1:1"}),
		producer.WithInstanceName("tls-switch"), producer.WithTls(on)); err != nil {
		t.Fatal(err)
	}
}

func (c *tlsCluster) producer(t *testing.T, group string) rocketmq.Producer {
	t.Helper()
	return newProducer(t, group, producer.WithNameServer([]string{c.ns}))
}

func (c *tlsCluster) push(t *testing.T, group, topic string) (rocketmq.PushConsumer, *collector) {
	t.Helper()
	col := newCollector()
	pc, err := rocketmq.NewPushConsumer(
		consumer.WithNameServer([]string{c.ns}),
		consumer.WithGroupName(group),
		consumer.WithInstance(instance("c")),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}, col.consume); err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { pc.Shutdown() }) })
	return pc, col
}

// sendAndConsume sends n messages with p and consumes them with a new group.
func (c *tlsCluster) sendAndConsume(t *testing.T, p rocketmq.Producer, topic, prefix string, n int) {
	t.Helper()
	for i := range n {
		sendSync(t, p, msg(topic, fmt.Sprintf("%s-%d", prefix, i), "TagT"))
	}
	pc, col := c.push(t, runName(t, "E2ETLS"+prefix+"G"), topic)
	defer pc.Shutdown()
	eventually(t, 30*time.Second, fmt.Sprintf("%d %s messages consumed", n, prefix), func() bool {
		for i := range n {
			if !col.has(fmt.Sprintf("%s-%d", prefix, i)) {
				return false
			}
		}
		return true
	})
}

// TestTLSEnforcingGoClient: the official Go client with WithTls(true) sends and
// consumes through an enforcing name server and broker (the broker registers over TLS,
// verifying the name server's chain); a plain-text client gets nothing: its route
// lookup is refused, and so is a plain-text request to the broker, each logged.
func TestTLSEnforcingGoClient(t *testing.T) {
	c := startTLSCluster(t, "broker-tls-enforcing", "enforcing")
	topic := runName(t, "E2ETLSEnforcing")
	c.createTopic(t, topic, 2)

	goClientTLS(t, true)
	p := c.producer(t, runName(t, "E2ETLSEnforcingP"))
	c.sendAndConsume(t, p, topic, "tls", 20)
	p.Shutdown()

	setGoClientTLS(t, false)
	plain := c.producer(t, runName(t, "E2ETLSEnforcingPlainP"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := plain.SendSync(ctx, msg(topic, "plain", "")); err == nil {
		t.Fatal("a plain-text client sent through an enforcing name server")
	}
	cl := remoting.NewClient(remoting.ClientConfig{Logger: slog.New(slog.DiscardHandler)})
	defer cl.Close()
	if _, err := invokeOn(t, cl, c.broker.addr, remoting.GetBrokerConfig, nil, nil); err == nil {
		t.Fatal("a plain-text request answered by an enforcing broker")
	}
	const refused = "refusing plain-text connection"
	eventually(t, 10*time.Second, "the refusals logged", func() bool {
		return strings.Contains(c.nsProc.output(), refused) && strings.Contains(c.broker.p.output(), refused)
	})
}

// TestTLSPermissiveGoClient: a permissive name server and broker serve the Go client
// with TLS and without, on the same ports.
func TestTLSPermissiveGoClient(t *testing.T) {
	c := startTLSCluster(t, "broker-tls-permissive", "permissive")
	topic := runName(t, "E2ETLSPermissive")
	c.createTopic(t, topic, 2)

	goClientTLS(t, true)
	p := c.producer(t, runName(t, "E2ETLSPermissiveP"))
	c.sendAndConsume(t, p, topic, "tls", 10)
	p.Shutdown()

	setGoClientTLS(t, false)
	p = c.producer(t, runName(t, "E2ETLSPermissivePlainP"))
	c.sendAndConsume(t, p, topic, "plain", 10)
}

// TestTLSCertificateRotationUnderLoad: while a TLS producer sends without pause, the
// certificate files are replaced as the kubelet replaces a Secret's; no send fails, the
// producer's connections go on, and new connections to the broker and the name server
// present the new certificate, with no restart.
func TestTLSCertificateRotationUnderLoad(t *testing.T) {
	c := startTLSCluster(t, "broker-tls-rotation", "enforcing")
	topic := runName(t, "E2ETLSRotation")
	c.createTopic(t, topic, 4)
	goClientTLS(t, true)
	// No retries: a send that lost its connection fails rather than going again.
	p := newProducer(t, runName(t, "E2ETLSRotationP"), producer.WithNameServer([]string{c.ns}), producer.WithRetry(0))

	var sent, failed atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			res, err := p.SendSync(ctx, msg(topic, fmt.Sprintf("rot-%d", i), ""))
			cancel()
			if err == nil && res.Status != primitive.SendOK {
				err = fmt.Errorf("status %v", res.Status)
			}
			if err != nil {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, err)
				continue
			}
			sent.Add(1)
		}
	}()
	eventually(t, 30*time.Second, "sends before the rotation", func() bool { return sent.Load() >= 50 })

	presented := func(addr string) string {
		conn, err := tls.Dial("tcp", addr, tlsconfig.NewClientConfig(c.ca.Pool(), nil, nil))
		if err != nil {
			return "dial: " + err.Error()
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	if cn := presented(c.broker.addr); cn != "broker-tls-rotation-1" {
		t.Fatalf("before the rotation the broker presents %q", cn)
	}
	leaf := c.ca.Issue(t, "broker-tls-rotation-2", tlstest.Options{})
	c.secret.Update(t, map[string][]byte{"tls.crt": leaf.CertPEM, "tls.key": leaf.KeyPEM, "ca.crt": c.ca.CertPEM})
	before := sent.Load()
	eventually(t, 30*time.Second, "the new certificate on new connections", func() bool {
		return presented(c.broker.addr) == "broker-tls-rotation-2" && presented(c.ns) == "broker-tls-rotation-2"
	})
	eventually(t, 30*time.Second, "sends after the rotation", func() bool { return sent.Load() >= before+50 })
	close(stop)
	<-done
	if n := failed.Load(); n != 0 {
		t.Fatalf("%d of %d sends failed across the rotation; first: %v", n, n+sent.Load(), firstErr.Load())
	}
	// A client that connects now gets the new certificate and is served.
	p.Shutdown()
	c.sendAndConsume(t, c.producer(t, runName(t, "E2ETLSRotationP2")), topic, "after", 5)
	if !strings.Contains(c.broker.p.output(), "certificate files reloaded") {
		t.Error("the broker did not log the reload")
	}
}

// TestTLSMasterSlave: an enforcing master replicates to its slave over TLS (HA port and
// metadata); the slave reaches the master and the name server with tls.enable. A
// plain-text connection to the master's HA port is refused.
func TestTLSMasterSlave(t *testing.T) {
	c := startTLSCluster(t, "broker-tls-ha", "enforcing")
	conf := c.tlsBrokerConf("enforcing")
	for k, v := range map[string]string{"listenPort": strconv.Itoa(freePort(2)), "brokerName": "broker-tls-ha", "brokerId": "1",
		"brokerRole": "SLAVE", "slaveReadEnable": "true", "slaveSynchronizeInterval": "300"} {
		conf[k] = v
	}
	slave := startTestBroker(t, "broker-tls-ha-slave", conf)
	topic := runName(t, "E2ETLSHA")
	c.createTopic(t, topic, 2)

	goClientTLS(t, true)
	p := c.producer(t, runName(t, "E2ETLSHAP"))
	const n = 20
	for i := range n {
		sendSync(t, p, msg(topic, fmt.Sprintf("ha-%d", i), ""))
	}
	maxOffsets := func(b *brokerProc) int64 {
		var total int64
		for q := range 2 {
			resp, err := invokeOn(t, c.rc, b.addr, remoting.GetMaxOffset, map[string]string{"topic": topic, "queueId": strconv.Itoa(q)}, nil)
			if err != nil {
				return -1
			}
			off, _ := strconv.ParseInt(resp.Field("offset"), 10, 64)
			total += off
		}
		return total
	}
	eventually(t, 20*time.Second, "the slave's consume queues to hold every message", func() bool { return maxOffsets(slave) == n })
	eventually(t, 20*time.Second, "the topic config to reach the slave", func() bool {
		resp, err := invokeOn(t, c.rc, slave.addr, remoting.GetAllTopicConfig, nil, nil)
		return err == nil && strings.Contains(string(resp.Body), topic)
	})
	// The master's HA port is listenPort+1.
	port, _ := strconv.Atoi(c.broker.addr[strings.LastIndexByte(c.broker.addr, ':')+1:])
	ha := "127.0.0.1:" + strconv.Itoa(port+1)
	nc, err := (&tls.Dialer{Config: tlsconfig.NewClientConfig(c.ca.Pool(), nil, nil)}).DialContext(context.Background(), "tcp", ha)
	if err != nil {
		t.Fatalf("TLS to the HA port: %v", err)
	}
	nc.Close()
	eventually(t, 10*time.Second, "a plain-text HA connection refused", func() bool {
		cl := remoting.NewClient(remoting.ClientConfig{Logger: slog.New(slog.DiscardHandler)})
		defer cl.Close()
		invokeOn(t, cl, ha, remoting.HeartBeat, nil, nil)
		return strings.Contains(c.broker.p.output(), "refusing plain-text connection")
	})
}
