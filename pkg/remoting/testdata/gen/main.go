// Command gen writes the Go-client fixtures in pkg/remoting/testdata by calling the
// official client's encoder (github.com/apache/rocketmq-client-go/v2/internal/remote).
// It is not part of our module: gen.sh builds it in a temporary module whose path sits
// under the client's, which is what lets it import the client's internal package.
package main

import (
	"bytes"
	"encoding/hex"
	"flag"
	"log"
	"os"
	"path/filepath"
	_ "unsafe" // go:linkname

	"github.com/apache/rocketmq-client-go/v2/internal/remote"
)

// codecType selects the client's header serialization (0 JSON, 1 ROCKETMQ). The client
// never sets it outside its own tests, so we reach it by name.
//
//go:linkname codecType github.com/apache/rocketmq-client-go/v2/internal/remote.codecType
var codecType byte

// sendFields is a typical SEND_MESSAGE_V2 header, the same values as sendHeaderFields in
// fixture_test.go.
var sendFields = map[string]string{
	"a": "please_rename_unique_group_name",
	"b": "TopicTest",
	"c": "TBW102",
	"d": "4",
	"e": "3",
	"f": "0",
	"g": "1700000000123",
	"h": "0",
	"i": "KEYS\x01order-42\x02TAGS\x01TagA\x02UNIQ_KEY\x017F0000010001\x02WAIT\x01true\x02",
	"j": "0",
	"k": "false",
	"m": "false",
}

func main() {
	out := flag.String("out", "..", "testdata folder")
	flag.Parse()
	type fixture struct {
		name  string
		codec byte
		cmd   *remote.RemotingCommand
	}
	fixtures := []fixture{
		{"go_json_request", remote.JsonCodecs, &remote.RemotingCommand{
			Code: 105, Version: 317, Opaque: 7, ExtFields: map[string]string{"topic": "TopicTest"},
		}},
		{"go_json_response", remote.JsonCodecs, &remote.RemotingCommand{
			Code: 0, Version: 317, Opaque: 7, Flag: 1, Remark: "ok", ExtFields: map[string]string{},
			Body: []byte(`{"brokerDatas":[]}`),
		}},
		{"go_binary_request", remote.RocketMQCodecs, &remote.RemotingCommand{
			Code: 105, Version: 317, Opaque: 7, ExtFields: map[string]string{"topic": "TopicTest"},
		}},
		{"go_binary_response", remote.RocketMQCodecs, &remote.RemotingCommand{
			Code: 17, Version: 317, Opaque: -2, Flag: 1, Remark: "No topic route info in name server for the topic: TopicTest",
			Body: []byte{0, 1, 2, 0xff},
		}},
		// Many fields: the client writes them in map order, so tests compare decoded values.
		{"go_json_send", remote.JsonCodecs, &remote.RemotingCommand{
			Code: 310, Version: 317, Opaque: 42, ExtFields: sendFields, Body: bytes.Repeat([]byte("x"), 1024),
		}},
		{"go_binary_send", remote.RocketMQCodecs, &remote.RemotingCommand{
			Code: 310, Version: 317, Opaque: 42, ExtFields: sendFields, Body: bytes.Repeat([]byte("x"), 1024),
		}},
	}
	for _, f := range fixtures {
		f.cmd.Language = 9 // _Go; the JSON encoder writes "GO" whatever it is
		codecType = f.codec
		var buf bytes.Buffer
		if err := f.cmd.WriteTo(&buf); err != nil {
			log.Fatalf("%s: %v", f.name, err)
		}
		path := filepath.Join(*out, f.name+".hex")
		if err := os.WriteFile(path, []byte(hex.EncodeToString(buf.Bytes())+"\n"), 0o644); err != nil {
			log.Fatal(err)
		}
		log.Printf("wrote %s (%d bytes)", path, buf.Len())
	}
	codecType = remote.JsonCodecs
}
