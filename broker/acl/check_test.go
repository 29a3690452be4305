package acl

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	pkgacl "github.com/openrmq/rocketmq-operator/pkg/acl"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// testRules is the file the Java remarks below were taken from (4.9.7's
// PlainAccessValidator run on it).
const testRules = `
globalWhiteRemoteAddresses:
- 10.10.103.*
accounts:
- accessKey: RocketMQPub
  secretKey: 12345678
  whiteRemoteAddress:
  admin: false
  defaultTopicPerm: DENY
  defaultGroupPerm: SUB
  topicPerms:
  - topicA=PUB
  - topicB=PUB|SUB
  - RMQ_SYS_TRACE_TOPIC=DENY
  groupPerms:
  - groupA=DENY
- accessKey: RocketMQAdmin
  secretKey: adminsecret
  admin: true
- accessKey: RocketMQAdminLimited
  secretKey: adminsecret
  admin: "true"
  topicPerms: [topicA=SUB]
- accessKey: RocketMQWhite
  secretKey: whitesecret
  whiteRemoteAddress: 192.168.0.{1,2}
`

func signed(code int16, fields map[string]string, body []byte, ak, sk string) Request {
	fields[pkgacl.FieldAccessKey] = ak
	fields[pkgacl.FieldSignature] = pkgacl.Sign(fields, body, sk)
	return Request{Code: code, Fields: fields, Body: body, RemoteIP: netip.MustParseAddr("127.0.0.1")}
}

func sendV2(topic, group string) map[string]string {
	return map[string]string{"a": group, "b": topic, "c": "TBW102", "d": "4", "e": "1"}
}

func pull(topic, group string) map[string]string {
	return map[string]string{"consumerGroup": group, "topic": topic, "queueId": "0", "queueOffset": "0"}
}

func TestCheck(t *testing.T) {
	r, err := ParseRules([]byte(testRules))
	if err != nil {
		t.Fatal(err)
	}
	const (
		validate = ", org.apache.rocketmq.acl.plain.PlainPermissionManager.validate(PlainPermissionManager.java:"
		perm     = ", org.apache.rocketmq.acl.plain.PlainPermissionManager.checkPerm(PlainPermissionManager.java:"
		exc      = "org.apache.rocketmq.acl.common.AclException: "
	)
	unsigned := Request{Code: remoting.SendMessageV2, Fields: sendV2("topicA", "pg"), RemoteIP: netip.MustParseAddr("127.0.0.1")}
	globalWhite := unsigned
	globalWhite.RemoteIP = netip.MustParseAddr("10.10.103.7")
	accountWhite := signed(remoting.SendMessageV2, sendV2("topicZ", "pg"), nil, "RocketMQWhite", "not-the-secret")
	accountWhite.RemoteIP = netip.MustParseAddr("192.168.0.2")
	heartbeat := []byte(`{"clientID":"c","consumerDataSet":[{"groupName":"groupC","subscriptionDataSet":[{"topic":"topicB"},{"topic":"topicA"}]}],"producerDataSet":[]}`)
	for _, c := range []struct {
		name   string
		req    Request
		remark string // "" allows
	}{
		{"send with PUB", signed(remoting.SendMessageV2, sendV2("topicA", "pg"), []byte("hello"), "RocketMQPub", "12345678"), ""},
		{"send under default DENY", signed(remoting.SendMessageV2, sendV2("topicC", "pg"), nil, "RocketMQPub", "12345678"),
			exc + "No default permission for topic:topicC" + perm + "605)"},
		{"send V1 topic field", signed(remoting.SendMessage, map[string]string{"topic": "topicC", "producerGroup": "pg"}, nil, "RocketMQPub", "12345678"),
			exc + "No default permission for topic:topicC" + perm + "605)"},
		{"wrong secret", signed(remoting.SendMessageV2, sendV2("topicA", "pg"), nil, "RocketMQPub", "wrongwrong"),
			exc + "Check signature failed for accessKey=RocketMQPub" + validate + "683)"},
		{"unknown account", signed(remoting.SendMessageV2, sendV2("topicA", "pg"), nil, "Nobody123", "wrongwrong"),
			exc + "No acl config for Nobody123" + validate + "667)"},
		{"unsigned", unsigned, exc + "No accessKey is configured" + validate + "663)"},
		{"no ext fields", Request{Code: remoting.GetAllTopicConfig}, exc + "No accessKey is configured" + validate + "663)"},
		{"global white list, unsigned", globalWhite, ""},
		{"account white list skips signature and perms", accountWhite, ""},
		{"send to a retry topic needs the group (V2 field a)", signed(remoting.SendMessageV2, sendV2("%RETRY%groupA", "groupA"), nil, "RocketMQPub", "12345678"),
			exc + "No default permission for group:groupA" + perm + "610)"},
		{"pull: explicit DENY on the group", signed(remoting.PullMessage, pull("topicB", "groupA"), nil, "RocketMQPub", "12345678"),
			exc + "No default permission for group:groupA" + perm + "610)"},
		{"pull: default group SUB", signed(remoting.PullMessage, pull("topicB", "groupB"), nil, "RocketMQPub", "12345678"), ""},
		{"pull: PUB-only topic", signed(remoting.PullMessage, pull("topicA", "groupA"), nil, "RocketMQPub", "12345678"),
			exc + "No default permission for topic:topicA" + perm + "610)"},
		{"send back needs the group", signed(remoting.ConsumerSendMsgBack, map[string]string{"group": "groupA", "offset": "1"}, nil, "RocketMQPub", "12345678"),
			exc + "No default permission for group:groupA" + perm + "610)"},
		{"create topic, not admin", signed(remoting.UpdateAndCreateTopic, map[string]string{"topic": "x"}, nil, "RocketMQPub", "12345678"),
			exc + "Need admin permission for request code=17, but accessKey=RocketMQPub is not" + perm + "580)"},
		{"create topic, admin", signed(remoting.UpdateAndCreateTopic, map[string]string{"topic": "x"}, nil, "RocketMQAdmin", "adminsecret"), ""},
		{"admin without perms may pull anything", signed(remoting.PullMessage, pull("topicQ", "groupQ"), nil, "RocketMQAdmin", "adminsecret"), ""},
		{"admin with perms is checked", signed(remoting.PullMessage, pull("topicQ", "groupQ"), nil, "RocketMQAdminLimited", "adminsecret"),
			exc + "No default permission for topic:topicQ" + perm + "605)"},
		{"heartbeat: each subscription", signed(remoting.HeartBeat, map[string]string{}, heartbeat, "RocketMQPub", "12345678"),
			exc + "No default permission for topic:topicA" + perm + "610)"},
		{"heartbeat without body", signed(remoting.HeartBeat, map[string]string{}, nil, "RocketMQPub", "12345678"),
			"org.apache.rocketmq.acl.common.AclException, org.apache.rocketmq.acl.plain.PlainAccessValidator.parse(PlainAccessValidator.java:134)"},
		{"offset update: group and topic", signed(remoting.UpdateConsumerOffset, map[string]string{"consumerGroup": "groupB", "topic": "topicA"}, nil, "RocketMQPub", "12345678"),
			exc + "No default permission for topic:topicA" + perm + "610)"},
		{"offset update without topic: group only", signed(remoting.UpdateConsumerOffset, map[string]string{"consumerGroup": "groupA"}, nil, "RocketMQPub", "12345678"),
			exc + "No default permission for group:groupA" + perm + "610)"},
		{"offset query is not checked", signed(remoting.QueryConsumerOffset, map[string]string{"consumerGroup": "groupA", "topic": "topicC"}, nil, "RocketMQPub", "12345678"), ""},
		{"batch send is not checked", signed(remoting.SendBatchMessage, sendV2("topicC", "pg"), nil, "RocketMQPub", "12345678"), ""},
		{"trace topic sends skip the check", signed(remoting.SendMessageV2, sendV2("RMQ_SYS_TRACE_TOPIC", "pg"), nil, "RocketMQPub", "12345678"), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := r.Check(c.req)
			switch {
			case c.remark == "" && d != nil:
				t.Fatalf("refused: %s", d.Remark())
			case c.remark != "" && d == nil:
				t.Fatalf("allowed, want %s", c.remark)
			case d != nil && d.Remark() != c.remark:
				t.Fatalf("remark\n got %s\nwant %s", d.Remark(), c.remark)
			}
		})
	}
}

// TestJavaHashOrder: the order 4.9.7 walks the resources in, taken from a java.util.HashMap
// filled in this order (Aa and BB share a hash code).
func TestJavaHashOrder(t *testing.T) {
	in := strings.Split("topicA,%RETRY%groupA,topicB,E2EAclTopic,%RETRY%E2EAclGroup,a,b,c,zz,Aa,BB,%RETRY%x,t1,t2,t3", ",")
	want := strings.Split("zz,Aa,BB,a,b,c,%RETRY%groupA,%RETRY%E2EAclGroup,topicA,topicB,%RETRY%x,t1,t2,E2EAclTopic,t3", ",")
	if got := javaHashOrder(in); !slices.Equal(got, want) {
		t.Fatalf("got  %v\nwant %v", got, want)
	}
	if javaStringHash("Aa") != 2112 || javaStringHash("BB") != 2112 || javaStringHash("\U0001F600") != uint32(55357*31+56832) {
		t.Fatal("String.hashCode mismatch")
	}
}

func TestPerms(t *testing.T) {
	for s, want := range map[string]Perm{"PUB": Pub, " SUB ": Sub, "PUB|SUB": Pub | Sub, "SUB|PUB": Pub | Sub,
		"DENY": Deny, "": Deny, "pub": Deny, "PUB | SUB": Deny} {
		if got := ParsePerm(s); got != want {
			t.Errorf("ParsePerm(%q) = %d, want %d", s, got, want)
		}
	}
	for _, c := range []struct {
		owned, needed Perm
		ok            bool
	}{{Pub, Pub, true}, {Pub, Sub, false}, {Pub | Sub, Sub, true}, {Deny | Pub, Pub, false}, {Sub, Any, true}, {Deny, Any, false}} {
		if c.owned.Allows(c.needed) != c.ok {
			t.Errorf("%d allows %d: want %v", c.owned, c.needed, c.ok)
		}
	}
	if !NeedsAdmin(remoting.DeleteTopicInBroker) || NeedsAdmin(remoting.GetAllTopicConfig) {
		t.Error("admin codes")
	}
}

func TestParseRulesRefuses(t *testing.T) {
	for name, file := range map[string]string{
		"short secret":    "accounts:\n- {accessKey: longenough, secretKey: short}",
		"missing key":     "accounts:\n- {secretKey: longenough}",
		"perm without =":  "accounts:\n- {accessKey: longenough, secretKey: longenough, topicPerms: [topicA]}",
		"perm with two =": "accounts:\n- {accessKey: longenough, secretKey: longenough, groupPerms: [g=SUB=PUB]}",
		"bad white":       "accounts:\n- {accessKey: longenough, secretKey: longenough, whiteRemoteAddress: 300.1.1.1}",
		"bad global":      "globalWhiteRemoteAddresses: [192.168.1.1-300]",
		"not a map":       "- a\n- b",
	} {
		if _, err := ParseRules([]byte(file)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	r, err := ParseRules(nil)
	if err != nil || len(r.accounts) != 0 || r.Check(Request{Fields: map[string]string{}}) == nil {
		t.Fatalf("empty file: %v %v", r, err)
	}
}
