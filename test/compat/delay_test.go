//go:build compat

package compat

import (
	"strings"
	"testing"
)

// TestDelayedDeliveryAsJavaBroker: the same delayed message (delayTimeLevel 2), sent and
// consumed by the Java 4.9.7 client, once through the Java 4.9.7 broker and once through
// ours. Both deliveries carry the same properties (ids, offsets and times masked; DELAY and
// the producer's WAIT among them, as 4.9.7's ScheduleMessageService stores them) and the
// consumer's getDelayTimeLevel() is the level the message was sent with (the Java program
// checks it).
func TestDelayedDeliveryAsJavaBroker(t *testing.T) {
	delivered := func(out string) string {
		for _, l := range strings.Split(out, "\n") {
			if p, ok := strings.CutPrefix(l, "PROPS "); ok {
				return p
			}
		}
		t.Fatalf("no PROPS line in:\n%s", lastLines(out, 20))
		return ""
	}

	jf := env(t)
	topic := uniq("compat_delay_java")
	createTopic(t, jf, newAdmin(t, jf), topic, 2)
	out, _ := runJavaProgram(t, jf.java, jf.work, "the Java broker "+jf.broker.Addr, "BrokerFeatures", "delay",
		"delay", jf.ns.Addr, topic, uniq("f"), uniq("compat_delay_java_group"))
	java := delivered(out)

	of := oursEnv(t)
	topic = uniq("compat_delay_ours")
	of.createTopic(t, topic, 2)
	out, _ = of.javaProgram(t, of.java, "BrokerFeatures", "delay", "delay", of.ns.Addr, topic, uniq("f"), uniq("compat_delay_ours_group"))
	ours := delivered(out)

	t.Logf("Java 4.9.7 delivers: %s", java)
	t.Logf("ours delivers:       %s", ours)
	if ours != java {
		t.Errorf("the delayed message's properties differ from the Java broker's:\n java: %s\n ours: %s", java, ours)
	}
	for _, want := range []string{"DELAY=2", "WAIT=true", "REAL_TOPIC=<topic>", "REAL_QID="} {
		if !strings.Contains(ours, want) {
			t.Errorf("our delivery lacks %s: %s", want, ours)
		}
	}
}
