package acl

import (
	"fmt"
	"testing"
)

// TestSignKnownVectors: signatures computed by the official clients themselves.
func TestSignKnownVectors(t *testing.T) {
	// rocketmq-client-go's own test of its signer (internal/remote/interceptor_test.go).
	got := Sign(map[string]string{"B": "RocketMQ Client", "A": "Hello ", FieldSignature: "ignored"}, []byte(" ACL Feature"), "adiaushdiaushd")
	if got != "tAb/54Rwwcq+pbH8Loi7FWX4QSQ=" {
		t.Errorf("Go client vector: got %s", got)
	}
	// A SEND_MESSAGE_V2 signed by 4.9.7's AclClientRPCHook (AK RocketMQPub, SK 12345678).
	fields := map[string]string{
		"AccessKey": "RocketMQPub", "Signature": "N1MnQrnio2mV2ND1P5St88mA2g8=", "a": "pg", "b": "topicA",
		"c": "TBW102", "d": "4", "e": "1", "f": "0", "g": "1700000000000", "h": "0", "i": "k\x01v\x02",
		"k": "false", "m": "false",
	}
	if got := Sign(fields, []byte("hello"), "12345678"); got != fields[FieldSignature] {
		t.Errorf("Java client vector: got %s", got)
	}
	fields[FieldUniqueKeyQuery] = "true"
	if got := Sign(fields, []byte("hello"), "12345678"); got != fields[FieldSignature] {
		t.Errorf("with %s: got %s", FieldUniqueKeyQuery, got)
	}
}

func TestCredentialsSignFields(t *testing.T) {
	c := Credentials{AccessKey: "RocketMQPub", SecretKey: "12345678"}
	fields := map[string]string{"a": "pg", "b": "topicA", "c": "TBW102", "d": "4", "e": "1", "f": "0",
		"g": "1700000000000", "h": "0", "i": "k\x01v\x02", "k": "false", "m": "false"}
	c.SignFields(fields, []byte("hello"))
	if fields[FieldAccessKey] != "RocketMQPub" || fields[FieldSignature] != "N1MnQrnio2mV2ND1P5St88mA2g8=" {
		t.Fatalf("signed fields: %v", fields)
	}
	c.SignFields(fields, []byte("hel"), nil, []byte("lo"))
	if fields[FieldSignature] != "N1MnQrnio2mV2ND1P5St88mA2g8=" {
		t.Errorf("signing again, the body in parts, changed the signature: %s", fields[FieldSignature])
	}
	if s := fmt.Sprintf("%v %+v", c, c); s != "accessKey=RocketMQPub accessKey=RocketMQPub" {
		t.Errorf("formatted credentials show %q", s)
	}
}
