package broker

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/pkg/acl"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

const testACL = `
accounts:
- accessKey: AclAdmin1
  secretKey: admin-secret
  admin: true
- accessKey: AclProducer
  secretKey: producer-secret
  defaultTopicPerm: DENY
  topicPerms: [AclTopic=PUB]
`

// signedInvoke sends a request signed as the clients sign it.
func (tb *testBroker) signedInvoke(ak, sk string, code int16, fields map[string]string, body []byte) *remoting.Command {
	tb.t.Helper()
	if fields == nil {
		fields = map[string]string{}
	}
	fields[acl.FieldAccessKey] = ak
	fields[acl.FieldSignature] = acl.Sign(fields, body, sk)
	return tb.invoke(code, fields, body)
}

func startACLBroker(t *testing.T, rules string) (*testBroker, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(file, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	return startBroker(t, "", func(c *config.Config) { c.AclEnable, c.AclPlainFile = true, file }), file
}

func wantRefused(t *testing.T, resp *remoting.Command, reason string) {
	t.Helper()
	if resp.Code != remoting.SystemError || !strings.HasPrefix(resp.Remark, "org.apache.rocketmq.acl.common.AclException: "+reason+", ") {
		t.Fatalf("want SYSTEM_ERROR for %q, got %d %q", reason, resp.Code, resp.Remark)
	}
}

// TestACLChecksEveryRoute: with aclEnable the hook stands before the handlers of
// broker.go and admin.go alike, and a refused request does nothing.
func TestACLChecksEveryRoute(t *testing.T) {
	tb, _ := startACLBroker(t, testACL)
	wantRefused(t, tb.invoke(remoting.GetAllTopicConfig, nil, nil), "No accessKey is configured")
	wantRefused(t, tb.sendV2("AclTopic", 0, "", "unsigned"), "No accessKey is configured")

	create := map[string]string{"topic": "AclTopic", "readQueueNums": "1", "writeQueueNums": "1", "perm": "6"}
	wantRefused(t, tb.signedInvoke("AclProducer", "producer-secret", remoting.UpdateAndCreateTopic, create, nil),
		"Need admin permission for request code=17, but accessKey=AclProducer is not")
	if resp := tb.signedInvoke("AclAdmin1", "admin-secret", remoting.UpdateAndCreateTopic, create, nil); resp.Code != remoting.Success {
		t.Fatalf("admin create topic: %d %s", resp.Code, resp.Remark)
	}

	send := func(topic string) map[string]string {
		return map[string]string{"a": "pg", "b": topic, "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "1", "h": "0", "i": "", "k": "false", "m": "false"}
	}
	if resp := tb.signedInvoke("AclProducer", "producer-secret", remoting.SendMessageV2, send("AclTopic"), []byte("ok")); resp.Code != remoting.Success {
		t.Fatalf("send with PUB: %d %s", resp.Code, resp.Remark)
	}
	wantRefused(t, tb.signedInvoke("AclProducer", "wrong-secret", remoting.SendMessageV2, send("AclTopic"), []byte("x")),
		"Check signature failed for accessKey=AclProducer")
	wantRefused(t, tb.signedInvoke("AclProducer", "producer-secret", remoting.SendMessageV2, send("TBW102"), []byte("x")),
		"No default permission for topic:TBW102")

	waitFor(t, func() bool { return tb.store.DispatchBehind() == 0 }) // max offsets count dispatched messages
	resp := tb.signedInvoke("AclProducer", "producer-secret", remoting.GetMaxOffset, map[string]string{"topic": "AclTopic", "queueId": "0"}, nil)
	if resp.Code != remoting.Success || resp.Field("offset") != "1" {
		t.Fatalf("max offset after one allowed and one refused send: %d %v", resp.Code, resp.ExtFields)
	}
}

// TestACLReloadAndBadFile: the broker serves the rules Poll installs, and a broker whose
// ACL file does not parse does not start.
func TestACLReloadAndBadFile(t *testing.T) {
	tb, file := startACLBroker(t, testACL)
	wantRefused(t, tb.invoke(remoting.GetAllTopicConfig, nil, nil), "No accessKey is configured")
	if err := os.WriteFile(file, []byte("globalWhiteRemoteAddresses: [127.0.0.1]\n"+testACL), 0o644); err != nil {
		t.Fatal(err)
	}
	if !tb.acl.Poll() {
		t.Fatal("changed ACL file not reloaded")
	}
	if resp := tb.invoke(remoting.GetAllTopicConfig, nil, nil); resp.Code != remoting.Success {
		t.Fatalf("white-listed unsigned request: %d %s", resp.Code, resp.Remark)
	}

	bad := filepath.Join(t.TempDir(), "plain_acl.yml")
	os.WriteFile(bad, []byte("accounts:\n- {accessKey: short, secretKey: short}\n"), 0o644)
	c := testConfig(t, t.TempDir())
	c.AclEnable, c.AclPlainFile = true, bad
	if b, err := New(c, Options{NoFastChannel: true, Logger: slog.New(slog.DiscardHandler)}); err == nil {
		b.Shutdown(t.Context())
		t.Fatal("broker started with an ACL file that does not parse")
	}
}
