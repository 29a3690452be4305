package properties

import (
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	text := "# comment\n" +
		"! also a comment\n" +
		"brokerName=broker-a\n" +
		"  listenPort : 10911\n" +
		"namesrvAddr 127.0.0.1:9876;127.0.0.2:9876\n" +
		"storePathRootDir = /data/store   \n" +
		"multi = one, \\\n     two\n" +
		"escaped\\ key=tab\\there \\u00e9\n" +
		"empty=\n" +
		"brokerName=broker-b\n"
	got, err := Parse(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	want := []Property{
		{"brokerName", "broker-a", 3},
		{"listenPort", "10911", 4},
		{"namesrvAddr", "127.0.0.1:9876;127.0.0.2:9876", 5},
		{"storePathRootDir", "/data/store", 6},
		{"multi", "one, two", 7},
		{"escaped key", "tab\there é", 9},
		{"empty", "", 10},
		{"brokerName", "broker-b", 11}, // later keys win when applied in order
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Parse:\n got %+v\nwant %+v", got, want)
	}
}

func TestParseRefusesBadEscapes(t *testing.T) {
	for _, in := range []string{"k=\\u12", "k=\\uzzzz"} {
		if _, err := Parse(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%q: err %v, want one naming line 1", in, err)
		}
	}
}

func TestFormatRoundTrips(t *testing.T) {
	in := map[string]string{"namesrvAddr": "a:1;b:2", "brokerName": "broker-a", "empty": ""}
	text := Format(in)
	if text != "brokerName=broker-a\nempty=\nnamesrvAddr=a:1;b:2\n" {
		t.Errorf("Format = %q", text)
	}
	props, err := Parse(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range props {
		out[p.Key] = p.Value
	}
	if !reflect.DeepEqual(out, in) {
		t.Errorf("round trip %v, want %v", out, in)
	}
}
