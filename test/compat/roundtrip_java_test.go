//go:build compat

package compat

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const javaRoundTripTimeout = 150 * time.Second

// TestJavaClientRoundTripThroughNamesrv: the official Java client (DefaultMQProducer and
// DefaultMQPushConsumer, rocketmq-client from Maven Central) resolves routes through the
// name server under test, sends to the Java broker and reads the messages back.
// The program is test/compat/java/src/org/openrmq/compat/RoundTrip.java.
func TestJavaClientRoundTripThroughNamesrv(t *testing.T) {
	f := env(t)
	if f.java.Classes == "" {
		t.Fatal("COMPAT_JAVA_CLASSES is not set: run through hack/compat.sh, which compiles test/compat/java/src")
	}
	adm := newAdmin(t, f)
	topic := uniq("compat_java_roundtrip")
	createTopic(t, f, adm, topic, 4)

	const n = 8
	dir := filepath.Join(f.work, "java-client")
	p, err := f.java.StartMain(dir, topic, "org.openrmq.compat.RoundTrip", f.ns.Addr, topic, fmt.Sprint(n), "90")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	select {
	case <-p.Done():
	case <-time.After(javaRoundTripTimeout):
		t.Fatalf("Java RoundTrip did not finish within %s; log %s:\n%s", javaRoundTripTimeout, p.LogPath, p.Tail(40))
	}
	_, exitErr := p.Exited()
	out := p.Log()
	if exitErr != nil || !strings.Contains(out, "ROUNDTRIP OK") {
		t.Fatalf("Java RoundTrip through name server %s failed (%v); client log %s (and %s/logs/rocketmq_client.log):\n%s",
			f.ns.Addr, exitErr, p.LogPath, dir, p.Tail(40))
	}
	t.Logf("Java client sent and received %d messages through name server %s", n, f.ns.Addr)
}
