package broker

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

func sqlHeartbeat(clientID, group, topic, expr string) []byte {
	b, _ := json.Marshal(map[string]any{
		"clientID": clientID, "producerDataSet": []any{},
		"consumerDataSet": []any{map[string]any{
			"groupName": group, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
			"consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET",
			"subscriptionDataSet": []any{map[string]any{
				"topic": topic, "subString": expr, "subVersion": 1, "expressionType": "SQL92",
			}},
		}},
	})
	return b
}

func checkClientRequest(group, expr string) []byte {
	b, _ := json.Marshal(map[string]any{"clientId": "c", "group": group,
		"subscriptionData": map[string]any{"topic": "F", "subString": expr, "expressionType": "SQL92"}})
	return b
}

// A SQL92 expression that does not compile is refused wherever it shows up, with the
// compiler's message: in a pull (SUBSCRIPTION_PARSE_FAILED), in a heartbeat (the same;
// the group is registered anyway, as Java does), in the pulls that rely on that
// heartbeat (FILTER_DATA_NOT_EXIST) and in CHECK_CLIENT_CONFIG.
func TestMalformedSQL92Refused(t *testing.T) {
	tb := startBroker(t, "", func(c *config.Config) { c.EnablePropertyFilter = true })
	tb.createTopic("F", 1)
	const bad = "a > > 1"
	f := pullFields("fg", "F", 0, 0, pullSubscription, bad)
	f["expressionType"] = "SQL92"
	if r := tb.invoke(remoting.PullMessage, f, nil); r.Code != remoting.SubscriptionParseFailed || !strings.Contains(r.Remark, "SQL92") {
		t.Fatalf("pull with a malformed expression: %v", r)
	}
	r := tb.invoke(remoting.HeartBeat, nil, sqlHeartbeat("c1", "fg", "F", bad))
	if r.Code != remoting.SubscriptionParseFailed || !strings.Contains(r.Remark, "fg") {
		t.Fatalf("heartbeat with a malformed expression: %v", r)
	}
	f = pullFields("fg", "F", 0, 0, 0, "")
	f["subVersion"] = "1"
	if r := tb.invoke(remoting.PullMessage, f, nil); r.Code != remoting.FilterDataNotExist {
		t.Fatalf("pull by the registered malformed expression: %v", r)
	}
	if r := tb.invoke(remoting.CheckClientConfig, nil, checkClientRequest("fg", bad)); r.Code != remoting.SubscriptionParseFailed {
		t.Fatalf("check client config: %v", r)
	}
	if r := tb.invoke(remoting.CheckClientConfig, nil, checkClientRequest("fg", "a > 1")); r.Code != remoting.Success {
		t.Fatalf("check client config of a good expression: %v", r)
	}
	if r := tb.invoke(remoting.HeartBeat, nil, sqlHeartbeat("c1", "fg", "F", "a > 1")); r.Code != remoting.Success {
		t.Fatalf("heartbeat with a good expression: %v", r)
	}
}

// Without enablePropertyFilter SQL92 is refused as Java refuses it.
func TestSQL92NeedsPropertyFilter(t *testing.T) {
	tb := startBroker(t, "", nil)
	tb.createTopic("F", 1)
	f := pullFields("fg", "F", 0, 0, pullSubscription, "a > 1")
	f["expressionType"] = "SQL92"
	const remark = "The broker does not support consumer to filter message by SQL92"
	if r := tb.invoke(remoting.PullMessage, f, nil); r.Code != remoting.SystemError || r.Remark != remark {
		t.Fatalf("SQL92 pull: %v", r)
	}
	if r := tb.invoke(remoting.CheckClientConfig, nil, checkClientRequest("fg", "a > 1")); r.Code != remoting.SystemError || r.Remark != remark {
		t.Fatalf("check client config: %v", r)
	}
}
