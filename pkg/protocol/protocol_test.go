package protocol

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"slices"
	"testing"
)

func TestQuoteBareKeys(t *testing.T) {
	for in, want := range map[string]string{
		`{0:"a:1",1:"b"}`:                  `{"0":"a:1","1":"b"}`,
		`{"x":{0:"a"},"y":[1,2,{3:"c"}]}`:  `{"x":{"0":"a"},"y":[1,2,{"3":"c"}]}`,
		`{ 0 : "a" , -1:"{0:\"q\"}"}`:      `{ "0" : "a" , "-1":"{0:\"q\"}"}`,
		`{"brokerAddrs":{"0":"h:1"}}`:      `{"brokerAddrs":{"0":"h:1"}}`,
		`["a,b",{k:1}]`:                    `["a,b",{"k":1}]`,
		`{"s":"{0:1}","t":"\",0:"}`:        `{"s":"{0:1}","t":"\",0:"}`,
		`{"topicList":["A","B"],"n":null}`: `{"topicList":["A","B"],"n":null}`,
	} {
		if got := string(QuoteBareKeys([]byte(in))); got != want {
			t.Errorf("QuoteBareKeys(%s)\n got %s\nwant %s", in, got, want)
		}
	}
}

// Java's fastjson writes ClusterInfo with bare brokerId keys; Decode must take it.
func TestDecodeFastjsonClusterInfo(t *testing.T) {
	body := `{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"},"brokerName":"broker-a","cluster":"DefaultCluster"}},"clusterAddrTable":{"DefaultCluster":["broker-a"]}}`
	var ci ClusterInfo
	if err := Decode([]byte(body), &ci); err != nil {
		t.Fatal(err)
	}
	bd := ci.BrokerAddrTable["broker-a"]
	if bd.BrokerAddrs[0] != "10.0.0.1:10911" || bd.BrokerAddrs[1] != "10.0.0.2:10911" || bd.MasterAddr() != "10.0.0.1:10911" {
		t.Errorf("broker-a = %+v", bd)
	}
	if !slices.Equal(ci.ClusterAddrTable["DefaultCluster"], []string{"broker-a"}) {
		t.Errorf("clusters = %v", ci.ClusterAddrTable)
	}
}

func TestRouteJSONIsCompactWithQuotedIDs(t *testing.T) {
	rd := TopicRouteData{
		QueueDatas:        []*QueueData{{BrokerName: "b", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}},
		BrokerDatas:       []*BrokerData{{Cluster: "c", BrokerName: "b", BrokerAddrs: map[int64]string{1: "h:2", 0: "h:1"}}},
		FilterServerTable: map[string][]string{},
	}
	want := `{"queueDatas":[{"brokerName":"b","readQueueNums":1,"writeQueueNums":1,"perm":6,"topicSysFlag":0}],"brokerDatas":[{"cluster":"c","brokerName":"b","brokerAddrs":{"0":"h:1","1":"h:2"}}],"filterServerTable":{}}`
	if got := string(MustEncode(rd)); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// javaCompressed lays out a compressed RegisterBrokerBody the way Java's encode does.
func javaCompressed(t *testing.T, dv string, lines []string, filters string) []byte {
	var raw bytes.Buffer
	part := func(s string) {
		binary.Write(&raw, binary.BigEndian, int32(len(s)))
		raw.WriteString(s)
	}
	part(dv)
	binary.Write(&raw, binary.BigEndian, int32(len(lines)))
	for _, l := range lines {
		part(l)
	}
	part(filters)
	var out bytes.Buffer
	zw := zlib.NewWriter(&out)
	zw.Write(raw.Bytes())
	zw.Close()
	return out.Bytes()
}

func TestDecodeCompressedRegisterBrokerBody(t *testing.T) {
	data := javaCompressed(t, `{"counter":7,"timestamp":1700000000000}`,
		[]string{"TopicA 8 8 6 SINGLE_TAG", "TBW102 16 16 7 SINGLE_TAG"}, `["10.0.0.9:5000"]`)
	b, err := DecodeRegisterBrokerBody(data, true)
	if err != nil {
		t.Fatal(err)
	}
	w := b.TopicConfigSerializeWrapper
	if w.DataVersion != (DataVersion{Counter: 7, Timestamp: 1700000000000}) {
		t.Errorf("data version = %+v", w.DataVersion)
	}
	if tc := w.TopicConfigTable["TopicA"]; tc == nil || tc.ReadQueueNums != 8 || tc.Perm != 6 {
		t.Errorf("TopicA = %+v", tc)
	}
	if tc := w.TopicConfigTable[DefaultTopic]; tc == nil || tc.Perm != DefaultTopicPerm {
		t.Errorf("TBW102 = %+v", tc)
	}
	if !slices.Equal(b.FilterServerList, []string{"10.0.0.9:5000"}) {
		t.Errorf("filters = %v", b.FilterServerList)
	}

	// Our encoder produces what Java's decoder expects: round trip through both forms.
	for _, compress := range []bool{true, false} {
		enc, err := b.Encode(compress)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeRegisterBrokerBody(enc, compress)
		if err != nil {
			t.Fatal(err)
		}
		if back.TopicConfigSerializeWrapper.DataVersion != w.DataVersion || len(back.TopicConfigSerializeWrapper.TopicConfigTable) != 2 ||
			*back.TopicConfigSerializeWrapper.TopicConfigTable["TopicA"] != *w.TopicConfigTable["TopicA"] {
			t.Errorf("compress=%v round trip = %+v", compress, back)
		}
	}

	for name, bad := range map[string][]byte{
		"not zlib":  []byte("plain"),
		"bad line":  javaCompressed(t, `{}`, []string{"only three fields"}, `[]`),
		"truncated": data[:len(data)/2],
		"empty":     {},
	} {
		if _, err := DecodeRegisterBrokerBody(bad, true); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestPermString(t *testing.T) {
	if PermString(PermRead|PermWrite) != "RW-" || PermString(DefaultTopicPerm) != "RWX" || PermString(PermRead) != "R--" {
		t.Error("PermString")
	}
}
