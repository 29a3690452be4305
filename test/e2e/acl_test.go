package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/openrmq/rocketmq-operator/pkg/acl"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

const (
	aclTopic = "E2EAclTopic"
	aclGroup = "E2EAclGroup"
	aclRules = `
accounts:
- accessKey: E2EAclAdmin
  secretKey: e2e-admin-secret
  admin: true
- accessKey: E2EAclPub
  secretKey: e2e-pub-secret
  defaultTopicPerm: DENY
  defaultGroupPerm: DENY
  topicPerms: [E2EAclTopic=PUB]
- accessKey: E2EAclSub
  secretKey: e2e-sub-secret
  defaultTopicPerm: DENY
  defaultGroupPerm: DENY
  topicPerms: [E2EAclTopic=SUB]
  groupPerms: [E2EAclGroup=SUB]
`
	// What a 4.9.7 broker answers, through the Go client's "CODE: %d, DESC: %s".
	aclRefusal = "CODE: 1, DESC: org.apache.rocketmq.acl.common.AclException: "
	inValidate = ", org.apache.rocketmq.acl.plain.PlainPermissionManager.validate(PlainPermissionManager.java:"
	inCheck    = ", org.apache.rocketmq.acl.plain.PlainPermissionManager.checkPerm(PlainPermissionManager.java:"
)

var (
	aclAdmin = primitive.Credentials{AccessKey: "E2EAclAdmin", SecretKey: "e2e-admin-secret"}
	aclPub   = primitive.Credentials{AccessKey: "E2EAclPub", SecretKey: "e2e-pub-secret"}
	aclSub   = primitive.Credentials{AccessKey: "E2EAclSub", SecretKey: "e2e-sub-secret"}
)

// TestAcl: a broker with aclEnable=true serves the official Go client by plain_acl.yml,
// refuses as the Java broker does, and picks up a change of the file while running.
func TestAcl(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "plain_acl.yml")
	writeACL(t, file, aclRules)
	// A cluster of its own and no auto-created topics: other tests never route to it.
	b := startTestBroker(t, "broker-e2eacl", map[string]string{"brokerClusterName": "E2EAclCluster",
		"autoCreateTopicEnable": "false", "aclEnable": "true", "aclPlainFile": file})

	// Admin-only: the Go admin client ignores the answer's code, so the effect is checked
	// on the broker, and the refusal itself with a request signed the same way.
	adminCreateTopic(t, b, aclPub)
	if aclHasTopic(t, b, aclTopic) {
		t.Fatal("a non-admin account created a topic")
	}
	resp := signedInvoke(t, b, aclPub, remoting.UpdateAndCreateTopic, map[string]string{"topic": aclTopic, "readQueueNums": "2", "writeQueueNums": "2", "perm": "6"})
	want := "org.apache.rocketmq.acl.common.AclException: Need admin permission for request code=17, but accessKey=E2EAclPub is not" + inCheck + "580)"
	if resp.Code != remoting.SystemError || resp.Remark != want {
		t.Fatalf("non-admin create topic: %d %q, want 1 %q", resp.Code, resp.Remark, want)
	}
	adminCreateTopic(t, b, aclAdmin)
	if !aclHasTopic(t, b, aclTopic) {
		t.Fatal("the admin account did not create the topic")
	}
	waitRoute(t, aclTopic, true)

	pub := aclProducer(t, "E2EAclPubP", &aclPub)
	for i := range 4 {
		sendSync(t, pub, msg(aclTopic, fmt.Sprintf("acl-%d", i), ""))
	}
	wantSendRefused(t, aclProducer(t, "E2EAclSubP", &aclSub), "No default permission for topic:E2EAclTopic"+inCheck+"610)")
	wrong := aclPub
	wrong.SecretKey = "not-the-secret"
	wantSendRefused(t, aclProducer(t, "E2EAclWrongP", &wrong), "Check signature failed for accessKey=E2EAclPub"+inValidate+"683)")
	anonymous := aclProducer(t, "E2EAclAnonP", nil)
	wantSendRefused(t, anonymous, "No accessKey is configured"+inValidate+"663)")

	col := newCollector()
	c, err := rocketmq.NewPushConsumer(consumer.WithNameServer([]string{namesrvAddr}), consumer.WithGroupName(aclGroup),
		consumer.WithInstance(instance("acl-c")), consumer.WithCredentials(aclSub),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe(aclTopic, consumer.MessageSelector{}, col.consume); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Shutdown() })
	eventually(t, 60*time.Second, "the SUB account to consume the 4 messages", func() bool { return col.distinct() == 4 })

	// Java checks globalWhiteRemoteAddresses first: a listed address needs no signature.
	writeACL(t, file, "globalWhiteRemoteAddresses: [127.0.0.1]\n"+aclRules)
	eventually(t, 30*time.Second, "an unsigned send from a white-listed address after the file changed", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		res, err := anonymous.SendSync(ctx, msg(aclTopic, "anonymous", ""))
		return err == nil && res.Status == primitive.SendOK
	})
}

func writeACL(t *testing.T, file, rules string) {
	t.Helper()
	// Written aside and renamed, so the broker never reads half a file.
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
}

func aclProducer(t *testing.T, group string, cred *primitive.Credentials) rocketmq.Producer {
	t.Helper()
	opts := []producer.Option{producer.WithInstanceName(instance("acl-p")), producer.WithRetry(0)}
	if cred != nil {
		opts = append(opts, producer.WithCredentials(*cred))
	}
	return newProducer(t, group, opts...)
}

func wantSendRefused(t *testing.T, p rocketmq.Producer, reason string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := p.SendSync(ctx, msg(aclTopic, "refused", ""))
	if err == nil || err.Error() != aclRefusal+reason {
		t.Fatalf("send: got error %v\nwant %s", err, aclRefusal+reason)
	}
}

// adminCreateTopic creates aclTopic with the official admin client. It signs a broker
// request only once RegisterACL ran, which GetAllSubscriptionGroup does (once: a second
// registration would sign the signature too).
func adminCreateTopic(t *testing.T, b *brokerProc, cred primitive.Credentials) {
	t.Helper()
	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{namesrvAddr})), admin.WithCredentials(cred))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := adm.GetAllSubscriptionGroup(ctx, b.addr, 5*time.Second); err != nil {
		t.Fatalf("signed GET_ALL_SUBSCRIPTIONGROUP_CONFIG as %s: %v", cred.AccessKey, err)
	}
	err = adm.CreateTopic(ctx, admin.WithTopicCreate(aclTopic), admin.WithBrokerAddrCreate(b.addr),
		admin.WithReadQueueNums(2), admin.WithWriteQueueNums(2), admin.WithPerm(6))
	if err != nil {
		t.Fatalf("create topic as %s: %v", cred.AccessKey, err)
	}
}

// signedInvoke sends a raw request signed as the clients sign it.
func signedInvoke(t *testing.T, b *brokerProc, cred primitive.Credentials, code int16, fields map[string]string) *remoting.Command {
	t.Helper()
	fields[acl.FieldAccessKey] = cred.AccessKey
	fields[acl.FieldSignature] = acl.Sign(fields, nil, cred.SecretKey)
	return invoke(t, b.addr, code, fields, nil)
}

// aclHasTopic asks the broker, as the admin account, whether it has topic.
func aclHasTopic(t *testing.T, b *brokerProc, topic string) bool {
	t.Helper()
	_, ok := topicTable(t, signedInvoke(t, b, aclAdmin, remoting.GetAllTopicConfig, map[string]string{}))[topic]
	return ok
}
