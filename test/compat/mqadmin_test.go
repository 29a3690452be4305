//go:build compat

package compat

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/remoting"
	"github.com/openrmq/rocketmq-operator/test/internal/procs"
)

const mqadminTimeout = 90 * time.Second

// mqadmin runs one command of the Java admin tool (rocketmq-tools' MQAdminStartup, what
// mqadmin runs) against the name server under test and returns its output. The tool prints
// failures rather than exiting non-zero, so callers check the output.
func mqadmin(t *testing.T, f *fixture, args ...string) string {
	t.Helper()
	return runMQAdmin(t, f.java, filepath.Join(f.work, "mqadmin"), f.ns.Addr, args...)
}

// runMQAdmin runs one mqadmin command with its files under dir against the name server
// at nsAddr, like mqadmin.
func runMQAdmin(t *testing.T, java procs.Java, dir, nsAddr string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), mqadminTimeout)
	defer cancel()
	name := uniq("mqadmin-" + args[0])
	out, err := java.RunMain(ctx, dir, name,
		"org.apache.rocketmq.tools.command.MQAdminStartup", append(args, "-n", nsAddr)...)
	if err != nil {
		t.Fatalf("mqadmin %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if strings.Contains(out, "SubCommandException") {
		t.Fatalf("mqadmin %s through name server %s failed:\n%s", strings.Join(args, " "), nsAddr, out)
	}
	return out
}

// TestJavaAdminToolThroughNamesrv: the Java admin tool (fastjson on the Java side) reads
// the name server's cluster info, topic list and a topic's route.
func TestJavaAdminToolThroughNamesrv(t *testing.T) {
	f := env(t)
	topic := uniq("compat_mqadmin")
	createTopic(t, f, newAdmin(t, f), topic, 3)

	// clusterList: GET_BROKER_CLUSTER_INFO (106), then the broker's runtime info.
	out := mqadmin(t, f, "clusterList")
	row := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(f.broker.Cluster) + `\s+` + regexp.QuoteMeta(f.broker.Name) + `\s+0\s+` + regexp.QuoteMeta(f.broker.Addr) + `\s`)
	if !row.MatchString(out) {
		t.Errorf("mqadmin clusterList has no row %q %q 0 %q:\n%s", f.broker.Cluster, f.broker.Name, f.broker.Addr, out)
	}

	// topicList: GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206).
	out = mqadmin(t, f, "topicList")
	if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(topic) + `\s*$`).MatchString(out) {
		t.Errorf("mqadmin topicList does not list %s:\n%s", topic, out)
	}

	// topicRoute: GET_ROUTEINFO_BY_TOPIC (105), printed as the TopicRouteData JSON.
	out = mqadmin(t, f, "topicRoute", "-t", topic)
	compact := strings.Join(strings.Fields(out), "")
	for _, want := range []string{
		`"brokerName":"` + f.broker.Name + `"`,
		`"cluster":"` + f.broker.Cluster + `"`,
		`"` + f.broker.Addr + `"`,
		`"readQueueNums":3`,
		`"writeQueueNums":3`,
	} {
		if !strings.Contains(compact, want) {
			t.Errorf("mqadmin topicRoute -t %s: no %s in:\n%s", topic, want, out)
		}
	}
}

// TestJavaAdminOrderConfKV: mqadmin updateOrderConf keeps a topic's order config in the
// name server's KV store (namespace ORDER_TOPIC_CONFIG: PUT_KV_CONFIG 100, GET_KV_CONFIG 101,
// DELETE_KV_CONFIG 102). With the default orderMessageEnable=false the name server does not
// add it to the topic's route as orderTopicConf (a Java producer would otherwise lay out the
// topic's queues from it instead of from the queue data).
func TestJavaAdminOrderConfKV(t *testing.T) {
	f := env(t)
	topic := uniq("compat_order")
	createTopic(t, f, newAdmin(t, f), topic, 4)
	conf := f.broker.Name + ":4"

	mqadmin(t, f, "updateOrderConf", "-t", topic, "-m", "put", "-v", conf)
	out := mqadmin(t, f, "updateOrderConf", "-t", topic, "-m", "get")
	if !strings.Contains(out, "orderConf=["+conf+"]") {
		t.Errorf("mqadmin updateOrderConf -m get after put %q: want orderConf=[%s] in:\n%s", conf, conf, out)
	}
	r, err := invokeNamesrv(t, f.ns.Addr, remoting.GetRouteInfoByTopic, map[string]string{"topic": topic})
	if err != nil {
		t.Fatal(err)
	}
	var route struct {
		OrderTopicConf string `json:"orderTopicConf"`
	}
	if err := decodeJSON(r.Body, &route); err != nil {
		t.Fatal(err)
	}
	if r.Code != codeSuccess || route.OrderTopicConf != "" {
		t.Errorf("GET_ROUTEINFO_BY_TOPIC (105) of %s with an order conf put and orderMessageEnable off (the default): code %d, orderTopicConf %q, want none (as the Java name server); body %s", topic, r.Code, route.OrderTopicConf, r.Body)
	}

	mqadmin(t, f, "updateOrderConf", "-t", topic, "-m", "delete")
	r, err = invokeNamesrv(t, f.ns.Addr, remoting.GetKVConfig, map[string]string{"namespace": "ORDER_TOPIC_CONFIG", "key": topic})
	if err != nil {
		t.Fatal(err)
	}
	if r.Code != codeQueryNotFound {
		t.Errorf("GET_KV_CONFIG (101) ORDER_TOPIC_CONFIG/%s after delete: code %d (remark %q, value %q), want QUERY_NOT_FOUND (22)", topic, r.Code, r.Remark, r.Field("value"))
	}
}
