//go:build compat

package compat

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

const mqadminTimeout = 90 * time.Second

// mqadmin runs one command of the Java admin tool (rocketmq-tools' MQAdminStartup, what
// mqadmin runs) against the name server under test and returns its output. The tool prints
// failures rather than exiting non-zero, so callers check the output.
func mqadmin(t *testing.T, f *fixture, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), mqadminTimeout)
	defer cancel()
	name := uniq("mqadmin-" + args[0])
	out, err := f.java.RunMain(ctx, filepath.Join(f.work, "mqadmin"), name,
		"org.apache.rocketmq.tools.command.MQAdminStartup", append(args, "-n", f.ns.Addr)...)
	if err != nil {
		t.Fatalf("mqadmin %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if strings.Contains(out, "SubCommandException") {
		t.Fatalf("mqadmin %s through name server %s failed:\n%s", strings.Join(args, " "), f.ns.Addr, out)
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
