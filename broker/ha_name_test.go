package broker

import "testing"

// TestMetadataAddrOfHA: a slave told its master's HA address by name syncs metadata from
// the same name, one port lower, and not from the IP of a registration answer.
func TestMetadataAddrOfHA(t *testing.T) {
	for in, want := range map[string]string{
		"rmq-broker-a-0.rmq-broker-a-headless.mq.svc:10912": "rmq-broker-a-0.rmq-broker-a-headless.mq.svc:10911",
		"10.0.0.1:10912": "10.0.0.1:10911",
		"":               "",
		"nohost":         "",
		":10912":         "",
		"h:x":            "",
	} {
		if got := metadataAddrOfHA(in); got != want {
			t.Errorf("metadataAddrOfHA(%q) = %q, want %q", in, got, want)
		}
	}
}
