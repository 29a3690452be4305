//go:build compat

package compat

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	rmqadmin "github.com/openrmq/rocketmq-operator/pkg/admin"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
	"github.com/openrmq/rocketmq-operator/pkg/tlsconfig"
	"github.com/openrmq/rocketmq-operator/pkg/tlsconfig/tlstest"
	"github.com/openrmq/rocketmq-operator/test/internal/procs"
)

// TLS between the official Java 4.9.7 programs and ours. What the Java side reads, as
// TlsSystemConfig has it: -Dtls.enable=true turns TLS on for a client (and for a
// broker's outgoing connections); with tls.test.mode.enable (default true) the client
// trusts any certificate and presents none; with it false, tls.client.authServer and
// trustCertPath verify the server's chain, and tls.client.certPath/keyPath are its
// certificate for mutual TLS.

// tlsFiles are a CA and two certificates (server, client) in files. Keys are PKCS#8 PEM,
// which Netty reads.
type tlsFiles struct {
	ca                    *tlstest.CA
	caPath                string
	certPath, keyPath     string // the servers' (ours and the Java broker's), also their client certificate
	clientCert, clientKey string // the Java clients'
	server, client        *tlstest.Leaf
}

func newTLSFiles(t *testing.T, dir string) *tlsFiles {
	t.Helper()
	ca := tlstest.NewCA(t, "compat CA")
	f := &tlsFiles{ca: ca, caPath: ca.WriteCA(t, filepath.Join(dir, "ca.crt")),
		server: ca.Issue(t, "compat server", tlstest.Options{}), client: ca.Issue(t, "compat java client", tlstest.Options{})}
	f.certPath, f.keyPath = f.server.Write(t, dir, "tls.crt", "tls.key")
	f.clientCert, f.clientKey = f.client.Write(t, dir, "client.crt", "client.key")
	return f
}

// serverConf are the tls.* keys of our name server and broker in mode, asking for client
// certificates as clientAuth says and verifying them against the CA.
func (f *tlsFiles) serverConf(mode, clientAuth string) map[string]string {
	return map[string]string{
		"tls.server.mode": mode, "tls.test.mode.enable": "false", "tls.server.need.client.auth": clientAuth,
		"tls.server.certPath": f.certPath, "tls.server.keyPath": f.keyPath, "tls.server.trustCertPath": f.caPath,
	}
}

// javaTLS are the JVM flags of a Java client: tls.enable in test mode (no certificate,
// no verification), or mutual TLS (its certificate, the server's chain verified).
func (f *tlsFiles) javaTLS(mutual bool) []string {
	if !mutual {
		return []string{"-Dtls.enable=true"}
	}
	return []string{"-Dtls.enable=true", "-Dtls.test.mode.enable=false",
		"-Dtls.client.authServer=true", "-Dtls.client.trustCertPath=" + f.caPath,
		"-Dtls.client.certPath=" + f.clientCert, "-Dtls.client.keyPath=" + f.clientKey}
}

// startOursTLS starts our name server and broker in mode, the broker registering over
// TLS with its certificate; the fixture's admin client speaks TLS with the client
// certificate.
func startOursTLS(t *testing.T, name, mode, clientAuth string) (*oursFixture, *tlsFiles) {
	t.Helper()
	java, err := procs.JavaFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if java.Classes == "" {
		t.Fatal("COMPAT_JAVA_CLASSES is not set: run through hack/compat.sh, which compiles test/compat/java/src")
	}
	binDir := envOr("COMPAT_BIN_DIR", filepath.Join("..", "..", "bin"))
	dir := filepath.Join(workDir, "tls-"+name)
	files := newTLSFiles(t, t.TempDir())
	f := &oursFixture{work: dir, java: java}
	t.Cleanup(func() {
		if t.Failed() {
			f.dumpLogs(t)
		}
		f.stop()
	})
	ctx, cancel := context.WithTimeout(context.Background(), brokerStartTimeout)
	defer cancel()
	if f.ns, err = procs.StartOurNamesrvConf(ctx, filepath.Join(binDir, "namesrv"), filepath.Join(dir, "namesrv"), files.serverConf(mode, clientAuth)); err != nil {
		t.Fatalf("our TLS name server: %v", err)
	}
	conf := files.serverConf(mode, clientAuth)
	for k, v := range map[string]string{
		"autoCreateTopicEnable": "false",
		"tls.enable":            "true", "tls.client.authServer": "true", "tls.client.trustCertPath": files.caPath,
		"tls.client.certPath": files.certPath, "tls.client.keyPath": files.keyPath,
	} {
		conf[k] = v
	}
	if f.broker, err = procs.StartOurBroker(ctx, filepath.Join(binDir, "broker"), filepath.Join(dir, "broker"), procs.BrokerOpts{
		Cluster: "TLSCluster", Name: "tls-" + name, NamesrvAddr: f.ns.Addr, Conf: conf}); err != nil {
		t.Fatalf("our TLS broker: %v", err)
	}
	f.rc = remoting.NewClient(remoting.ClientConfig{Logger: slog.New(slog.DiscardHandler),
		TLS: tlsconfig.NewClientConfig(files.ca.Pool(), &files.server.Pair, nil)})
	f.adm = rmqadmin.New(f.rc)
	return f, files
}

// createTopicTLS creates topic on the fixture's broker over its TLS admin client and
// waits until the name server routes it.
func (f *oursFixture) createTopicTLS(t *testing.T, topic string, queues int) {
	t.Helper()
	q := strconv.Itoa(queues)
	err := eventually(routeTimeout, 250*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := f.rc.Invoke(ctx, f.broker.Addr, remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
			"topic": topic, "readQueueNums": q, "writeQueueNums": q, "perm": "6",
			"topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"}, nil))
		if err != nil || resp.Code != codeSuccess {
			return fmt.Errorf("UPDATE_AND_CREATE_TOPIC (17) over TLS: %v %v", resp, err)
		}
		resp, err = f.rc.Invoke(ctx, f.ns.Addr, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
		if err != nil || resp.Code != codeSuccess {
			return fmt.Errorf("GET_ROUTEINFO_BY_TOPIC (105) over TLS: %v %v", resp, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// javaTLSVariant is a Java client: TLS or not (and how), and its headers.
type javaTLSVariant struct {
	name   string
	tls    bool
	mutual bool
	binary bool
	served bool // by the fixture
}

func (v javaTLSVariant) jvmArgs(f *tlsFiles) []string {
	var args []string
	if v.tls {
		args = f.javaTLS(v.mutual)
	}
	if v.binary {
		args = append(args, "-Drocketmq.serialize.type=ROCKETMQ")
	}
	return args
}

// TestTLSOurBrokerJavaClients: the official Java client 4.9.7 with -Dtls.enable=true
// (test mode: no certificate) and with a client certificate (mutual TLS), with JSON and
// binary headers, sends and push-consumes through our name server and broker in
// permissive, enforcing and enforcing-with-required-client-certificate modes. A
// plain-text client is served by permissive and refused by enforcing; a TLS client
// without a certificate is refused where one is required.
func TestTLSOurBrokerJavaClients(t *testing.T) {
	for _, fx := range []struct {
		mode, clientAuth string
		variants         []javaTLSVariant
	}{
		{"permissive", "optional", []javaTLSVariant{
			{name: "tls-json", tls: true, served: true},
			{name: "tls-binary", tls: true, binary: true, served: true},
			{name: "plain-json", served: true},
		}},
		{"enforcing", "optional", []javaTLSVariant{
			{name: "tls-json", tls: true, served: true},
			{name: "tls-binary", tls: true, binary: true, served: true},
			{name: "mutual-json", tls: true, mutual: true, served: true},
			{name: "plain-json"},
		}},
		{"enforcing", "require", []javaTLSVariant{
			{name: "mutual-json", tls: true, mutual: true, served: true},
			{name: "mutual-binary", tls: true, mutual: true, binary: true, served: true},
			{name: "tls-without-certificate", tls: true},
		}},
	} {
		t.Run(fx.mode+"-"+fx.clientAuth, func(t *testing.T) {
			f, files := startOursTLS(t, fx.mode+"-"+fx.clientAuth, fx.mode, fx.clientAuth)
			for _, v := range fx.variants {
				t.Run(v.name, func(t *testing.T) {
					j := f.java.WithJVMArgs(v.jvmArgs(files)...)
					topic := uniq("compat_tls_" + strings.ReplaceAll(v.name, "-", "_"))
					f.createTopicTLS(t, topic, 2)
					prefix := uniq("t")
					const n = 6
					if !v.served {
						f.javaRefused(t, j, topic, prefix)
						return
					}
					out, _ := f.javaClient(t, j, "send", "send", f.ns.Addr, topic, prefix, strconv.Itoa(n))
					if !strings.Contains(out, fmt.Sprintf("TLS %t", v.tls)) {
						t.Fatalf("the Java client's tls.enable is not %t: %s", v.tls, lastLines(out, 20))
					}
					if want := map[bool]string{false: "JSON", true: "ROCKETMQ"}[v.binary]; !strings.Contains(out, "SERIALIZE "+want) {
						t.Fatalf("the Java client did not use %s headers: %s", want, lastLines(out, 20))
					}
					if got := len(sentOK.FindAllString(out, -1)); got != n {
						t.Fatalf("%d SEND_OK results, want %d:\n%s", got, n, out)
					}
					group := uniq("compat_tls_group")
					f.javaClient(t, j, "push consume", "consume", f.ns.Addr, topic, prefix, group, strconv.Itoa(n), strconv.Itoa(consumeSeconds))
					f.checkCommitted(t, group, topic, 2, n)
				})
			}
		})
	}
}

// javaRefused runs a Java producer that must not get a message through.
func (f *oursFixture) javaRefused(t *testing.T, j procs.Java, topic, prefix string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), javaClientTimeout)
	defer cancel()
	name := uniq("java-refused")
	dir := filepath.Join(f.work, "java-clients", name)
	out, err := j.RunMain(ctx, dir, name, "org.openrmq.compat.BrokerClient", "send", f.ns.Addr, topic, prefix, "1")
	if err == nil || strings.Contains(out, "RESULT OK") || sentOK.MatchString(out) {
		t.Fatalf("a Java client the servers should refuse sent a message (%v):\n%s", err, lastLines(out, 20))
	}
	t.Logf("refused as it should be: %s", resultLine(out))
	// Its route lookup is the first request; it gets no further than the name server.
	if log := f.ns.Log(); !strings.Contains(log, "refusing plain-text connection") && !strings.Contains(log, "TLS handshake failed") {
		t.Errorf("the name server logged no refusal:\n%s", f.ns.Tail(10))
	}
}

// TestTLSJavaBrokerWithOurTLSNamesrv: the Java 4.9.7 broker registers with our name
// server in enforcing mode with required client certificates, over mutual TLS from its
// tls.client.* settings (tls.enable=true, its chain check of our certificate, its
// certificate); the name server then lists and routes it.
func TestTLSJavaBrokerWithOurTLSNamesrv(t *testing.T) {
	java, err := procs.JavaFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	binDir := envOr("COMPAT_BIN_DIR", filepath.Join("..", "..", "bin"))
	dir := filepath.Join(workDir, "tls-java-broker")
	files := newTLSFiles(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), brokerStartTimeout)
	defer cancel()
	ns, err := procs.StartOurNamesrvConf(ctx, filepath.Join(binDir, "namesrv"), filepath.Join(dir, "namesrv"), files.serverConf("enforcing", "require"))
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Stop(procs.DefaultStopGrace)
	jb := java.WithJVMArgs("-Dtls.enable=true", "-Dtls.test.mode.enable=false",
		"-Dtls.client.authServer=true", "-Dtls.client.trustCertPath="+files.caPath,
		"-Dtls.client.certPath="+files.certPath, "-Dtls.client.keyPath="+files.keyPath,
		// Its own listeners, permissive (the default) with the same pair.
		"-Dtls.server.certPath="+files.certPath, "-Dtls.server.keyPath="+files.keyPath)
	b, err := procs.StartJavaBroker(ctx, jb, filepath.Join(dir, "java-broker"), procs.BrokerOpts{
		Cluster: "TLSJavaCluster", Name: "tls-java-broker", NamesrvAddr: ns.Addr})
	if err != nil {
		t.Fatalf("the Java broker: %v\n%s", err, ns.Tail(30))
	}
	defer b.Stop(procs.DefaultStopGrace)

	rc := remoting.NewClient(remoting.ClientConfig{Logger: slog.New(slog.DiscardHandler),
		TLS: tlsconfig.NewClientConfig(files.ca.Pool(), &files.client.Pair, nil)})
	defer rc.Close()
	adm := rmqadmin.New(rc)
	var info *protocol.ClusterInfo
	err = eventually(60*time.Second, 500*time.Millisecond, func() error {
		qctx, qcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer qcancel()
		var err error
		if info, err = adm.ClusterInfo(qctx, ns.Addr); err != nil {
			return err
		}
		if bd := info.BrokerAddrTable["tls-java-broker"]; bd == nil || bd.BrokerAddrs[protocol.MasterID] != b.Addr {
			return fmt.Errorf("the Java broker is not registered: %+v", info.BrokerAddrTable)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("GET_BROKER_CLUSTER_INFO (106) over TLS: %v\nname server log:\n%s\nJava broker log:\n%s", err, ns.Tail(30), b.Tail(30))
	}
	// A plain-text request to the same name server is refused.
	plain := remoting.NewClient(remoting.ClientConfig{Logger: slog.New(slog.DiscardHandler)})
	defer plain.Close()
	pctx, pcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer pcancel()
	if _, err := plain.Invoke(pctx, ns.Addr, remoting.NewRequest(remoting.GetBrokerClusterInfo, nil, nil)); err == nil {
		t.Error("a plain-text request was answered by the enforcing name server")
	}
}
